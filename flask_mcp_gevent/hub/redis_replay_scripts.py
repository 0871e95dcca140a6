"""The Redis hub's scripts that append to a session's replay log: bounded, routed to the stream's holder, once.

Appending and routing happen in one atomic step, so every worker sees one order of events per session.
"""

from __future__ import annotations

__all__ = ["DELIVER_SCRIPT", "PUBLISH_SCRIPT"]


# Hands a new entry of the log to the worker holding its stream (if any holds it) and returns its id.
ROUTE = """
local function route(id)
  local owner = redis.call('GET', KEYS[3])
  if owner then
    local worker = string.match(owner, '^([^|]*)|')
    redis.call('PUBLISH', ARGV[5] .. worker,
               'm\\n' .. ARGV[3] .. '\\n' .. ARGV[4] .. '\\n' .. id .. '\\n' .. ARGV[1])
  end
  return id
end
"""

# Rebuilds a replay log's bookkeeping (the size of each entry, oldest first, and their sum) from the log itself,
# for when it expired or was deleted apart from the log; returns the sum.
REBUILD_SIZES = """
local function rebuild_sizes(replay, sizes, total)
  redis.call('DEL', sizes)
  local bytes = 0
  for _, entry in ipairs(redis.call('XRANGE', replay, '-', '+')) do
    local fields = entry[2]
    for i = 1, #fields, 2 do
      if fields[i] == 'd' then
        local size = string.len(fields[i + 1])
        redis.call('RPUSH', sizes, size)
        bytes = bytes + size
      end
    end
  end
  redis.call('SET', total, bytes)
  return bytes
end
"""

# KEYS: session, replay, claim, replay sizes, replay bytes. ARGV: message json, replay max, session id, request
# stream ('' for the session's own), worker channel prefix, replay max bytes.
# Trims the oldest entries past replay max entries or bytes; the newest always stays. While no entry is larger than
# max bytes / max, MAXLEN alone keeps both bounds (half the commands); the first larger one builds the bookkeeping
# (entry sizes, their sum) from the log, and both bounds apply from then on. Both bookkeeping keys lost at once
# (maxmemory eviction) leave MAXLEN alone until the larger entries age out; one lost is rebuilt.
PUBLISH_SCRIPT = ROUTE + REBUILD_SIZES + """
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -2 then return false end
local size = string.len(ARGV[1])
local fields = {'d', ARGV[1]}
if ARGV[4] ~= '' then fields = {'d', ARGV[1], 's', ARGV[4]} end
local id
if size <= math.floor(tonumber(ARGV[6]) / tonumber(ARGV[2])) and redis.call('EXISTS', KEYS[4], KEYS[5]) == 0 then
  id = redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[2], '*', unpack(fields))
  if ttl > 0 and redis.call('XLEN', KEYS[2]) == 1 then
    redis.call('PEXPIRE', KEYS[2], ttl)  -- a new log
  end
  return route(id)
end
local kept = redis.call('XLEN', KEYS[2]) + 1
id = redis.call('XADD', KEYS[2], '*', unpack(fields))
local bytes, rebuilt
if kept > 1 and redis.call('LLEN', KEYS[4]) == kept - 1 and redis.call('EXISTS', KEYS[5]) == 1 then
  redis.call('RPUSH', KEYS[4], size)
  bytes = redis.call('INCRBY', KEYS[5], size)
else
  bytes = rebuild_sizes(KEYS[2], KEYS[4], KEYS[5])
  rebuilt = true
end
local dropped, freed = 0, 0
while kept - dropped > 1 and (kept - dropped > tonumber(ARGV[2]) or bytes - freed > tonumber(ARGV[6])) do
  freed = freed + tonumber(redis.call('LPOP', KEYS[4]))
  dropped = dropped + 1
end
if dropped > 0 then
  redis.call('XTRIM', KEYS[2], 'MAXLEN', kept - dropped)
  redis.call('DECRBY', KEYS[5], freed)
end
-- Only keys made here (a new log, its bookkeeping rebuilt) take the session's TTL: from then on, every script
-- that moves the session's TTL moves theirs too.
if ttl > 0 and rebuilt then
  redis.call('PEXPIRE', KEYS[2], ttl)
  redis.call('PEXPIRE', KEYS[4], ttl)
  redis.call('PEXPIRE', KEYS[5], ttl)
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
