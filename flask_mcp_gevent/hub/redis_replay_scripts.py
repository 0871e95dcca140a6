"""The Redis hub's scripts that append to a session's replay log: bounded, routed to the stream's holder, once.

Appending and routing happen in one atomic step, so every worker sees one order of events per session.
"""

from __future__ import annotations

from flask_mcp_gevent.hub.redis_keys import SESSION_KEYS_LUA

__all__ = ["DELIVER_SCRIPT", "PUBLISH_SCRIPT"]


# Hands a new entry of the log to the worker holding its stream (if any holds it) and returns its id.
ROUTE = """
local function route(id)
  local owner = redis.call('GET', claim)
  if owner then
    local worker = string.match(owner, '^([^|]*)|')
    redis.call('PUBLISH', ARGV[5] .. worker,
               'm\\n' .. ARGV[3] .. '\\n' .. ARGV[4] .. '\\n' .. id .. '\\n' .. ARGV[1])
  end
  return id
end
"""

# The length of a replay entry's message (its 'd' field): what the byte bound counts.
DATA_SIZE = """
local function data_size(entry)
  local fields = entry[2]
  for i = 1, #fields, 2 do
    if fields[i] == 'd' then return string.len(fields[i + 1]) end
  end
  return 0
end
"""

# KEYS: a session's (SessionKeys; the claim of the stream it goes to). ARGV: message json, replay max, session id,
# request stream ('' for the session's own), worker channel prefix, replay max bytes.
# Drops the oldest entries past replay max entries or bytes; the newest always stays. replay_bytes holds the sum of
# the log's message lengths; lost apart from the log (expired, evicted), it is summed again from the log.
# (Older versions also kept a ...:replay:sizes list: left behind by a fleet mid-upgrade, it expires with its TTL.)
PUBLISH_SCRIPT = SESSION_KEYS_LUA + ROUTE + DATA_SIZE + """
local ttl = redis.call('PTTL', session)
if ttl == -2 then return false end
local fields = {'d', ARGV[1]}
if ARGV[4] ~= '' then fields = {'d', ARGV[1], 's', ARGV[4]} end
local kept = redis.call('XLEN', replay) + 1
local id = redis.call('XADD', replay, '*', unpack(fields))
local bytes = kept > 1 and tonumber(redis.call('GET', replay_bytes))
local rebuilt = not bytes
if rebuilt then
  bytes = 0
  for _, entry in ipairs(redis.call('XRANGE', replay, '-', '+')) do bytes = bytes + data_size(entry) end
else
  bytes = bytes + string.len(ARGV[1])
end
while kept > 1 and (kept > tonumber(ARGV[2]) or bytes > tonumber(ARGV[6])) do
  local oldest = redis.call('XRANGE', replay, '-', '+', 'COUNT', 1)[1]
  redis.call('XDEL', replay, oldest[1])
  bytes = bytes - data_size(oldest)
  kept = kept - 1
end
redis.call('SET', replay_bytes, bytes, 'KEEPTTL')  -- the TTL the session's scripts moved stays
-- Only keys made here (a new log, its counter rebuilt) take the session's TTL: from then on, every script that
-- moves the session's TTL moves theirs too.
if ttl > 0 and rebuilt then
  redis.call('PEXPIRE', replay, ttl)
  redis.call('PEXPIRE', replay_bytes, ttl)
end
return route(id)
"""

# The publish script, at most once per delivery token. KEYS and ARGV: the publish script's, then the token's key
# (last KEY) and how long to remember it in ms (last ARGV). A timed-out attempt may still run once Redis is back:
# every later attempt returns what the first that ran did instead of appending again.
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
