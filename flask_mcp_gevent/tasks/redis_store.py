"""Tasks in Redis (the tasks extension), so that any worker on any host reads and changes them.

One hash per task, `mcp:task:{<principal>}:<id>`, holds its record as one JSON text, the record's version and, apart,
the request, which no change touches (so no change writes it again); it expires with the task's TTL (PEXPIREAT).
One sorted set per principal, `mcp:tasks:{<principal>}`, scores its task ids by expiry and bounds how many it holds.
`<principal>` is a hash of the principal, in braces: both keys of one principal share a Cluster hash slot, and a
lookup by another principal names another key. The rules of every change are TaskRecord's (tasks/record.py); here are
only the steps: read, store-if-unchanged, create within the limit.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict

from flask_mcp_gevent.encoding import dumps, loads
from flask_mcp_gevent.store.redis_link import RedisLink
from flask_mcp_gevent.tasks.record import TaskRecord
from flask_mcp_gevent.tasks.store import TaskStore

__all__ = ["TASK_PREFIX", "TASKS_OF_PREFIX", "TASK_SCRIPTS", "RedisTaskStore", "task_keys"]

TASK_PREFIX = "mcp:task:"
TASKS_OF_PREFIX = "mcp:tasks:"
ANONYMOUS = "-"
# What the stored record leaves out: what the key names, and what the hash keeps in fields of their own.
APART = ("task_id", "principal", "version", "request")

CREATE = """
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[2])
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then return 0 end
redis.call('HSET', KEYS[1], 'version', '0', 'record', ARGV[6], 'request', ARGV[7])
redis.call('PEXPIREAT', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
return 1
"""
# The version has a field of its own so the check never decodes the record; HSET keeps the key's expiry.
SAVE = """
if redis.call('HGET', KEYS[1], 'version') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'version', ARGV[2], 'record', ARGV[3])
return 1
"""
# By the name the store's link knows them by (beside the store's own scripts, redis_scripts.py).
TASK_SCRIPTS = {"task_create": CREATE, "task_save": SAVE}


def principal_tag(principal: str | None) -> str:
    """The hash tag of a principal's keys: short, safe in a key whatever the principal's name, never ambiguous."""
    name = ANONYMOUS if principal is None else "p:" + principal
    return hashlib.sha256(name.encode()).hexdigest()[:20]


def task_keys(principal: str | None, task_id: str) -> tuple[str, str]:
    """(the task's hash, its principal's index), in one Cluster hash slot."""
    tag = principal_tag(principal)
    return f"{TASK_PREFIX}{{{tag}}}:{task_id}", f"{TASKS_OF_PREFIX}{{{tag}}}"


def stored(record: TaskRecord) -> bytes:
    """The JSON a task's hash keeps of its record (its texts as strings, never decoded)."""
    return dumps({name: value for name, value in asdict(record).items() if name not in APART})


class RedisTaskStore(TaskStore):
    """The task store of the Redis store: its connection and its outage handling, scripts of its own."""

    def __init__(self, link: RedisLink, max_ttl_ms: int) -> None:
        self.link = link
        self.max_ttl_ms = max_ttl_ms
        link.add_scripts(TASK_SCRIPTS)

    def create(self, record: TaskRecord, limit: int) -> bool:
        """Store a new task unless its principal holds limit unexpired ones."""
        args = [record.task_id, record.created_ms, record.expires_ms, limit, self.max_ttl_ms, stored(record),
                record.request]
        return bool(self.link.run("task_create", list(task_keys(record.principal, record.task_id)), args))

    def load(self, principal: str | None, task_id: str) -> TaskRecord | None:
        """The task as stored now, with its version."""
        key, _ = task_keys(principal, task_id)
        version, record, request = self.link.execute("HMGET", key, "version", "record", "request")
        if record is None:
            return None
        return TaskRecord(task_id=task_id, principal=principal, version=int(version), request=request.decode(),
                          **loads(record))

    def save(self, record: TaskRecord) -> bool:
        """Store the changed record unless the task changed since it was loaded."""
        key, _ = task_keys(record.principal, record.task_id)
        return bool(self.link.run("task_save", [key], [record.version, record.version + 1, stored(record)]))
