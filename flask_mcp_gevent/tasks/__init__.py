"""The tasks extension (`io.modelcontextprotocol/tasks`, MCP 2026-07-28): a tools/call that runs on as a task.

record.py is a task as stored and the rules of its changes; store.py and redis_store.py keep records (in this
worker, or in Redis for the fleet); request.py and shapes.py are what a task keeps of its request and how it is
shown; runner.py runs tasks on this worker; methods.py answers tools/call as a task, tasks/get, tasks/update and
tasks/cancel.
"""
