"""The Redis hub's keys and Lua scripts: each script is one atomic step in a session's life.

Atomic matters twice: appending to the replay log and routing to the worker that
holds the stream happen together (one order of events per session, on every
worker), and claiming a stream and reading what it missed happen together
(every event is either in the replay read or published to the new holder after).
Scripts read Redis's own clock (TIME), so hosts with skewed clocks agree.
"""

from __future__ import annotations

__all__ = [
    "ATTACH_SCRIPT",
    "CLOSE_SCRIPT",
    "CONTROL_CHANNEL",
    "COUNT_SCRIPT",
    "CREATE_SCRIPT",
    "DELIVERY_PREFIX",
    "DELIVER_SCRIPT",
    "DETACH_SCRIPT",
    "GET_SCRIPT",
    "PUBLISH_SCRIPT",
    "REFRESH_SCRIPT",
    "SCRIPTS",
    "SESSION_INDEX",
    "UPDATE_SCRIPT",
    "WORKER_CHANNEL",
    "session_keys",
]

PREFIX = "mcp:"
CONTROL_CHANNEL = PREFIX + "control"
WORKER_CHANNEL = PREFIX + "worker:"
SESSION_INDEX = PREFIX + "sessions"
DELIVERY_PREFIX = PREFIX + "delivery:"

# Prepended to the scripts that read the time: Redis's clock in milliseconds.
NOW_MS = """
local function redis_now_ms()
  local now = redis.call('TIME')
  return tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
end
"""

# KEYS: session, index. ARGV: session json, ttl ms, max sessions, session id.
CREATE_SCRIPT = NOW_MS + """
local now_ms = redis_now_ms()
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now_ms)
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[3]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[2], now_ms + tonumber(ARGV[2]), ARGV[4])
return 1
"""

# KEYS: session, detached, replay, delivered, index. ARGV: ttl ms, session id.
# A client request ends a resume window: the session gets the full idle TTL again (Streamable clients need no stream).
GET_SCRIPT = NOW_MS + """
local data = redis.call('GET', KEYS[1])
if not data then return false end
redis.call('DEL', KEYS[2])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[3], ARGV[1])
redis.call('PEXPIRE', KEYS[4], ARGV[1])
local now_ms = redis_now_ms()
redis.call('ZADD', KEYS[5], 'XX', now_ms + tonumber(ARGV[1]), ARGV[2])
return data
"""

# KEYS: session. ARGV: fields to assign (a JSON object), subscription to add ('' for none), subscription to
# remove ('' for none), most subscriptions a session may hold (-1: no bound), '1' to refuse once negotiated.
# One session change, read and written in one atomic step (concurrent requests of a session never undo each
# other). Returns {0} for an unknown session, {1, json} once changed, {2, json} when refused. cjson writes an
# empty list as {} and keeps 14 digits of a number, so the hub stores what the client chose as JSON text
# (strings pass unchanged) and an empty subscription list is left out.
UPDATE_SCRIPT = """
local data = redis.call('GET', KEYS[1])
if not data then return {0} end
local session = cjson.decode(data)
if ARGV[5] == '1' and type(session.protocol_version) == 'string' then return {2, data} end
local subscriptions = session.subscriptions
if type(subscriptions) ~= 'table' then subscriptions = {} end
local function position(uri)
  for i, held in ipairs(subscriptions) do
    if held == uri then return i end
  end
  return nil
end
if ARGV[2] ~= '' and not position(ARGV[2]) then
  local limit = tonumber(ARGV[4])
  if limit >= 0 and #subscriptions >= limit then return {2, data} end
  table.insert(subscriptions, ARGV[2])
end
local gone = ARGV[3] ~= '' and position(ARGV[3])
if gone then table.remove(subscriptions, gone) end
for name, value in pairs(cjson.decode(ARGV[1])) do session[name] = value end
if #subscriptions > 0 then session.subscriptions = subscriptions else session.subscriptions = nil end
data = cjson.encode(session)
redis.call('SET', KEYS[1], data, 'KEEPTTL')
return {1, data}
"""

# KEYS: session, replay, claim. ARGV: message json, replay max, session id, request stream ('' for the
# session's own), worker channel prefix.
# Append and route in one atomic step, so every worker sees one order of events per session.
PUBLISH_SCRIPT = """
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -2 then return false end
local id
if ARGV[4] == '' then
  id = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', 'd', ARGV[1])
else
  id = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', 'd', ARGV[1], 's', ARGV[4])
end
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
local owner = redis.call('GET', KEYS[3])
if owner then
  local worker = string.match(owner, '^([^|]*)|')
  redis.call('PUBLISH', ARGV[5] .. worker,
             'm\\n' .. ARGV[3] .. '\\n' .. ARGV[4] .. '\\n' .. id .. '\\n' .. ARGV[1])
end
return id
"""

# The publish script, at most once per delivery token. KEYS and ARGV: the publish script's, then the token's key
# (last KEY) and how long to remember it in ms (last ARGV). An answer's publish is retried through a Redis
# outage, and an attempt that timed out may still run once Redis answers again: every attempt after the first
# that ran returns what that one did instead of appending the answer again.
DELIVER_SCRIPT = """
local earlier = redis.call('GET', KEYS[#KEYS])
if earlier then
  if earlier == '' then return false end
  return earlier
end
local function publish()
""" + PUBLISH_SCRIPT + """
end
local id = publish()
redis.call('SET', KEYS[#KEYS], id or '', 'PX', ARGV[#ARGV])
return id
"""

# KEYS: session, claim, replay, delivered, detached.
# ARGV: owner, exclusive, after, claim ttl ms, session ttl ms, session id, worker channel prefix, this worker,
# request stream ('' for the session's own).
# Claim the session's stream and read what it missed in the same atomic step: every event is
# either in the replay returned here or published to this worker afterwards. Returns
# {1, entries, id the replay starts after}, {0} for an unknown session, {-1} for a conflict.
ATTACH_SCRIPT = """
if redis.call('EXISTS', KEYS[1]) == 0 then return {0} end
local current = redis.call('GET', KEYS[2])
if current and current ~= ARGV[1] then
  local worker, token = string.match(current, '^([^|]*)|(.*)$')
  if worker and worker ~= ARGV[8] then
    local alive = redis.call('PUBSUB', 'NUMSUB', ARGV[7] .. worker)[2] > 0
    if alive then
      if ARGV[2] == '1' then return {-1} end
      redis.call('PUBLISH', ARGV[7] .. worker,
                 'e\\n' .. ARGV[6] .. '\\n' .. ARGV[9] .. '\\n' .. token .. '\\nreplaced by a newer stream')
    end
  end
end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[4])
if ARGV[9] == '' then redis.call('DEL', KEYS[5]) end
if redis.call('EXISTS', KEYS[5]) == 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
  redis.call('PEXPIRE', KEYS[3], ARGV[5])
  redis.call('PEXPIRE', KEYS[4], ARGV[5])
end
local after = ARGV[3]
if after == '' then after = redis.call('GET', KEYS[4]) end
if after == '$' then
  local last = redis.call('XREVRANGE', KEYS[3], '+', '-', 'COUNT', 1)[1]
  return {1, {}, last and last[1] or '0-0'}
end
if after then return {1, redis.call('XRANGE', KEYS[3], '(' .. after, '+'), after} end
return {1, redis.call('XRANGE', KEYS[3], '-', '+'), '0-0'}
"""

# KEYS: claim, delivered, session, replay, detached. ARGV: owner, delivered id, resume window ms,
# '1' for the session's own stream. Only the stream that still holds its claim lets go of it; the
# session's own stream also records what it delivered and starts the resume window.
DETACH_SCRIPT = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
if ARGV[4] ~= '1' then return 1 end
local ttl = redis.call('PTTL', KEYS[3])
if ttl == -2 then return 0 end
if ARGV[2] ~= '' then redis.call('SET', KEYS[2], ARGV[2], 'PX', math.max(ttl, 1)) end
local window = tonumber(ARGV[3])
if window <= 0 then
  redis.call('DEL', KEYS[3], KEYS[4], KEYS[2])
  return 1
end
redis.call('SET', KEYS[5], '1', 'PX', window)
if ttl < 0 or ttl > window then
  redis.call('PEXPIRE', KEYS[3], window)
  redis.call('PEXPIRE', KEYS[4], window)
  redis.call('PEXPIRE', KEYS[2], window)
end
return 1
"""

# KEYS: claim, session, replay, delivered, index, detached.
# ARGV: owner, claim ttl ms, session ttl ms, delivered id ('' to leave it), session id.
# Returns 0 when the session is gone, 1 when the claim held, 2 when the claim is gone (the caller
# re-takes it only if the stream is still open: it may have closed since the refresh began),
# 3 when another stream holds it now.
REFRESH_SCRIPT = NOW_MS + """
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
local current = redis.call('GET', KEYS[1])
if not current then return 2 end
if current ~= ARGV[1] then return 3 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if ARGV[4] ~= '' then redis.call('SET', KEYS[4], ARGV[4], 'PX', ARGV[3]) end
if redis.call('EXISTS', KEYS[6]) == 0 then
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
  redis.call('PEXPIRE', KEYS[3], ARGV[3])
  redis.call('PEXPIRE', KEYS[4], ARGV[3])
  local now_ms = redis_now_ms()
  redis.call('ZADD', KEYS[5], 'XX', now_ms + tonumber(ARGV[3]), ARGV[5])
end
return 1
"""

# KEYS: session, replay, delivered, claim, detached, index. ARGV: session id, control channel.
# Every worker hears that the session closed and ends its streams (the session's own and request streams).
CLOSE_SCRIPT = """
local existed = redis.call('DEL', KEYS[1])
redis.call('DEL', KEYS[2], KEYS[3], KEYS[4], KEYS[5])
redis.call('ZREM', KEYS[6], ARGV[1])
redis.call('PUBLISH', ARGV[2], '{"op":"closed","session":"' .. ARGV[1] .. '"}')
return existed
"""

# KEYS: index.
COUNT_SCRIPT = NOW_MS + """
local now_ms = redis_now_ms()
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now_ms)
return redis.call('ZCARD', KEYS[1])
"""


def session_keys(session_id: str, stream: str | None = None) -> dict[str, str]:
    """The Redis keys that hold one session; "claim" is that of its own stream, or of a request stream."""
    base = PREFIX + "session:" + session_id
    return {
        "session": base,
        "replay": base + ":replay",
        "claim": base + ":stream" + ("" if stream is None else ":" + stream),
        "delivered": base + ":delivered",
        "detached": base + ":detached",
    }


SCRIPTS = {
    "create": CREATE_SCRIPT,
    "get": GET_SCRIPT,
    "publish": PUBLISH_SCRIPT,
    "deliver": DELIVER_SCRIPT,
    "attach": ATTACH_SCRIPT,
    "detach": DETACH_SCRIPT,
    "refresh": REFRESH_SCRIPT,
    "close": CLOSE_SCRIPT,
    "count": COUNT_SCRIPT,
    "update": UPDATE_SCRIPT,
}
