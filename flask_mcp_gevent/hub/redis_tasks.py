"""Tasks in Redis (the tasks extension), so that any worker on any host reads and changes them.

One hash per task, `mcp:task:{<principal>}:<id>`, with its state in fields and its questions and answers as
`q:<key>` and `a:<key>`; it expires with the task's TTL (PEXPIREAT). One sorted set per principal,
`mcp:tasks:{<principal>}`, scores its task ids by expiry and bounds how many it holds. `<principal>` is a hash
of the principal, in braces: both keys of one principal share a Cluster hash slot, and a lookup by another
principal names another key. Each change is one Lua script that checks the state it starts from.
"""

from __future__ import annotations

import hashlib
from typing import Any

from flask_mcp_gevent.hub.redis_link import RedisLink
from flask_mcp_gevent.hub.tasks import TaskRecord, TaskStore

__all__ = ["TASK_PREFIX", "TASKS_OF_PREFIX", "TASK_SCRIPTS", "RedisTaskStore", "task_keys"]

TASK_PREFIX = "mcp:task:"
TASKS_OF_PREFIX = "mcp:tasks:"
ANONYMOUS = "-"

CREATE = """
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[2])
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 6))
redis.call('PEXPIREAT', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
return 1
"""
GET = """
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local failed = 0
if redis.call('HGET', KEYS[1], 'status') == 'working'
    and tonumber(redis.call('HGET', KEYS[1], 'lease')) < tonumber(ARGV[1]) then
  redis.call('HSET', KEYS[1], 'status', 'failed', 'message', ARGV[2], 'error', ARGV[3], 'owner', '', 'lease', '0',
             'updated', ARGV[1])
  failed = 1
end
return {failed, redis.call('HGETALL', KEYS[1])}
"""
ANSWER = """
if redis.call('HGET', KEYS[1], 'status') ~= 'input_required' then return 0 end
for i = 4, #ARGV, 2 do
  if redis.call('HEXISTS', KEYS[1], 'q:' .. ARGV[i]) == 1 and redis.call('HEXISTS', KEYS[1], 'a:' .. ARGV[i]) == 0 then
    redis.call('HSET', KEYS[1], 'a:' .. ARGV[i], ARGV[i + 1])
  end
end
redis.call('HSET', KEYS[1], 'updated', ARGV[1])
local asks = {}
for _, name in ipairs(redis.call('HKEYS', KEYS[1])) do
  if string.sub(name, 1, 2) == 'q:' then
    if redis.call('HEXISTS', KEYS[1], 'a:' .. string.sub(name, 3)) == 0 then return 0 end
    table.insert(asks, name)
  end
end
if #asks > 0 then redis.call('HDEL', KEYS[1], unpack(asks)) end
redis.call('HSET', KEYS[1], 'status', 'working', 'owner', ARGV[2], 'lease', ARGV[3])
return 1
"""
PARK = """
if redis.call('HGET', KEYS[1], 'status') ~= 'working' or redis.call('HGET', KEYS[1], 'owner') ~= ARGV[2] then
  return 0
end
for i = 3, #ARGV, 2 do redis.call('HSET', KEYS[1], 'q:' .. ARGV[i], ARGV[i + 1]) end
redis.call('HSET', KEYS[1], 'status', 'input_required', 'owner', '', 'lease', '0', 'updated', ARGV[1])
return 1
"""
FINISH = """
if redis.call('HGET', KEYS[1], 'status') ~= 'working' or redis.call('HGET', KEYS[1], 'owner') ~= ARGV[2] then
  return 0
end
redis.call('HSET', KEYS[1], 'status', ARGV[3], 'message', ARGV[4], 'result', ARGV[5], 'error', ARGV[6],
           'owner', '', 'lease', '0', 'updated', ARGV[1])
return 1
"""
CANCEL = """
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return -1 end
if status == 'completed' or status == 'failed' or status == 'cancelled' then return 0 end
redis.call('HSET', KEYS[1], 'status', 'cancelled', 'message', ARGV[2], 'owner', '', 'lease', '0', 'updated', ARGV[1])
return 1
"""
RENEW = """
if redis.call('HGET', KEYS[1], 'status') ~= 'working' or redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'lease', ARGV[2])
return 1
"""
# By the name the hub's link knows them by (beside the hub's own scripts, redis_scripts.py).
TASK_SCRIPTS = {"task_create": CREATE, "task_get": GET, "task_answer": ANSWER, "task_park": PARK,
                "task_finish": FINISH, "task_cancel": CANCEL, "task_renew": RENEW}


def principal_tag(principal: str | None) -> str:
    """The hash tag of a principal's keys: short, safe in a key whatever the principal's name, never ambiguous."""
    name = ANONYMOUS if principal is None else "p:" + principal
    return hashlib.sha256(name.encode()).hexdigest()[:20]


def task_keys(principal: str | None, task_id: str) -> tuple[str, str]:
    """(the task's hash, its principal's index), in one Cluster hash slot."""
    tag = principal_tag(principal)
    return f"{TASK_PREFIX}{{{tag}}}:{task_id}", f"{TASKS_OF_PREFIX}{{{tag}}}"


def text(value: Any) -> str:
    """A Redis reply as text."""
    return value.decode() if isinstance(value, bytes) else str(value)


def record_of(task_id: str, principal: str | None, flat: list[Any]) -> TaskRecord:
    """Read a task from its hash's HGETALL reply."""
    fields = {text(flat[i]): text(flat[i + 1]) for i in range(0, len(flat), 2)}
    return TaskRecord(
        task_id=task_id, principal=principal, status=fields.get("status", ""),
        created_ms=int(fields.get("created", 0)), updated_ms=int(fields.get("updated", 0)),
        ttl_ms=int(fields.get("ttl", 0)), request=fields.get("request", "{}"),
        status_message=fields.get("message", ""), lease_owner=fields.get("owner", ""),
        lease_until_ms=int(fields.get("lease", 0)),
        asks={name[2:]: value for name, value in fields.items() if name.startswith("q:")},
        answers={name[2:]: value for name, value in fields.items() if name.startswith("a:")},
        result=fields.get("result", ""), error=fields.get("error", ""))


def pairs(mapping: dict[str, str]) -> list[str]:
    """key, value, key, value... for a script's ARGV."""
    return [item for key, value in mapping.items() for item in (key, value)]


class RedisTaskStore(TaskStore):
    """The task store of the Redis hub: its connection and its outage handling, scripts of its own."""

    def __init__(self, link: RedisLink, max_ttl_ms: int) -> None:
        self.link = link
        self.max_ttl_ms = max_ttl_ms

    def _run(self, name: str, keys: list[str], args: list[Any]) -> Any:
        """Run one of the task scripts (registered with the hub's own, see TASK_SCRIPTS)."""
        with self.link.guard:
            return self.link.run("task_" + name, keys, args)

    def create(self, record: TaskRecord, limit: int) -> bool:
        """Store a new task unless its principal holds limit unexpired ones."""
        key, index = task_keys(record.principal, record.task_id)
        fields = {"status": record.status, "created": record.created_ms, "updated": record.updated_ms,
                  "ttl": record.ttl_ms, "request": record.request, "message": record.status_message,
                  "owner": record.lease_owner, "lease": record.lease_until_ms}
        args = [record.task_id, record.created_ms, record.expires_ms, limit, self.max_ttl_ms,
                *pairs({k: str(v) for k, v in fields.items()})]
        return bool(self._run("create", [key, index], args))

    def get(self, principal: str | None, task_id: str, now: int, lapsed: tuple[str, str]) -> tuple[
            TaskRecord | None, bool]:
        """The task; a working one whose lease ran out is failed first."""
        key, _ = task_keys(principal, task_id)
        reply = self._run("get", [key], [now, *lapsed])
        if not reply:
            return None, False
        return record_of(task_id, principal, reply[1]), bool(reply[0])

    def answer(self, principal: str | None, task_id: str, answers: dict[str, str], worker: str, lease_until: int,
               now: int) -> bool:
        """Keep answers to open questions; resume the task on worker when none is left."""
        key, _ = task_keys(principal, task_id)
        return bool(self._run("answer", [key], [now, worker, lease_until, *pairs(answers)]))

    def park(self, principal: str | None, task_id: str, worker: str, asks: dict[str, str], now: int) -> bool:
        """Move worker's working task to input_required with these questions."""
        key, _ = task_keys(principal, task_id)
        return bool(self._run("park", [key], [now, worker, *pairs(asks)]))

    def finish(self, principal: str | None, task_id: str, worker: str, status: str, now: int, *, result: str = "",
               error: str = "", message: str = "") -> bool:
        """End worker's working task with a result or an error."""
        key, _ = task_keys(principal, task_id)
        return bool(self._run("finish", [key], [now, worker, status, message, result, error]))

    def cancel(self, principal: str | None, task_id: str, message: str, now: int) -> bool | None:
        """Cancel a task that has not ended."""
        key, _ = task_keys(principal, task_id)
        outcome = int(self._run("cancel", [key], [now, message]))
        return None if outcome < 0 else bool(outcome)

    def renew(self, principal: str | None, task_id: str, worker: str, lease_until: int) -> bool:
        """Extend the lease of worker's working task."""
        key, _ = task_keys(principal, task_id)
        return bool(self._run("renew", [key], [worker, lease_until]))
