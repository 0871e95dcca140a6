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
# Append and route in one atomic step, so every worker sees one order of events per session. The log is trimmed
# from its oldest entries past MCP_REPLAY_MAX entries or MCP_REPLAY_MAX_BYTES bytes; the newest always stays.
# A new log (or one whose bookkeeping is rebuilt) takes the session's TTL here; after that, the scripts that move
# the session's TTL move the log's (GET, ATTACH, REFRESH and DETACH, given its sizes and bytes keys).
# Counting bytes is needed only once an entry is larger than MCP_REPLAY_MAX_BYTES / MCP_REPLAY_MAX: while every
# entry is at most that, MCP_REPLAY_MAX entries are within the byte bound too, so a log without bookkeeping is
# trimmed by XADD's MAXLEN alone (half the commands). Its first larger entry builds the bookkeeping from the log,
# and from then on the log is trimmed by both bounds, as every log was before (and as an older release does).
# (Bookkeeping lost apart from its log, both keys at once, say to maxmemory eviction, leaves a log bounded by
# MCP_REPLAY_MAX alone until its larger entries age out; one key lost is rebuilt as before.)
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
