"""The Redis store's Lua scripts: each is one atomic step in a session's life (see ATTACH_SCRIPT, PUBLISH_SCRIPT).

Scripts read Redis's own clock (TIME), so hosts with skewed clocks agree. Appending to a replay log and routing the
entry happen in one atomic step, so every worker sees one order of events per session.
"""

from flask_mcp_gevent.store.redis_keys import SESSION_KEYS_LUA

__all__ = ["SCRIPTS"]


# Prepended to the scripts that read the time: Redis's clock in milliseconds, as now_ms.
NOW_MS = """
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
"""

# KEYS: index[, owner]. ARGV: ttl ms, max sessions, session id[, owner limit].
# Takes a new session's place in the index (and its owner's set); the caller then stores it (another hash slot).
# Returns 1, or 0 when the fleet is full, -1 when the owner is. An owner's set that looks full first drops the ids
# the index no longer lists, so nothing else has to keep it fresh.
CREATE_SCRIPT = NOW_MS + """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now_ms)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
if KEYS[2] and redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then
  for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
    if not redis.call('ZSCORE', KEYS[1], id) then redis.call('ZREM', KEYS[2], id) end
  end
  if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then return -1 end
end
redis.call('ZADD', KEYS[1], now_ms + tonumber(ARGV[1]), ARGV[3])
if KEYS[2] then redis.call('ZADD', KEYS[2], now_ms, ARGV[3]) end
return 1
"""

# KEYS: index. ARGV: ttl ms, session id, session id, ... Moves the index's expiry of sessions whose TTL a session
# script just renewed (their keys are in other hash slots); an entry already past its expiry stays past it.
TOUCH_SCRIPT = NOW_MS + """
for i = 2, #ARGV do
  local score = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if score and tonumber(score) > now_ms then redis.call('ZADD', KEYS[1], now_ms + tonumber(ARGV[1]), ARGV[i]) end
end
return 1
"""

# The session scripts (get, publish, deliver, attach, detach, refresh, close) all take one session's keys, as
# redis_keys.session_keys gives them: KEYS[1] session, KEYS[2] replay, KEYS[3] replay_bytes, KEYS[4] delivered,
# KEYS[5] detached, KEYS[6] claim; SESSION_KEYS_LUA names them so. The replay log, its byte counter and the delivered
# id live as long as the session: every script that moves the session's TTL moves theirs with it (expire_session).
SESSION_TTL = SESSION_KEYS_LUA + """
local function expire_session(ms)
  for _, key in ipairs({session, replay, replay_bytes, delivered}) do redis.call('PEXPIRE', key, ms) end
end
"""

# ARGV: ttl ms. A client request ends a resume window and renews the full idle TTL (Streamable clients need no
# stream); the caller then moves the index (TOUCH_SCRIPT).
GET_SCRIPT = SESSION_TTL + """
local data = redis.call('GET', session)
if not data then return false end
redis.call('DEL', detached)
expire_session(ARGV[1])
return data
"""

# KEYS: session. ARGV: fields to assign (a JSON object), subscription to add ('' for none), subscription to
# remove ('' for none), most subscriptions a session may hold (-1: no bound), '1' to refuse once negotiated.
# Returns {0} for an unknown session, {1, json} once changed, {2, json} when refused. cjson writes an empty list as
# {} and keeps 14 digits of a number: the client's fields are stored as JSON text, an empty subscription list left out.
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

# ARGV: owner, exclusive, after, claim ttl ms, session ttl ms, session id, worker channel prefix, this worker,
# request stream ('' for the session's own)[, on a cluster: the claim's worker if it is alive, else ''].
# Claims and reads in one step: every event is in the replay returned or published to this worker after.
# Returns {1, entries from that id on (itself first while the log holds it), that id}, {0} for an unknown
# session, {-1} for a conflict.
ATTACH_SCRIPT = SESSION_TTL + """
if redis.call('EXISTS', session) == 0 then return {0} end
local current = redis.call('GET', claim)
if current and current ~= ARGV[1] then
  local worker, token = string.match(current, '^([^|]*)|(.*)$')
  if worker and worker ~= ARGV[8] then
    local alive = ARGV[10] == worker
    if not ARGV[10] then alive = redis.call('PUBSUB', 'NUMSUB', ARGV[7] .. worker)[2] > 0 end
    if alive then
      if ARGV[2] == '1' then return {-1} end
      redis.call('PUBLISH', ARGV[7] .. worker,
                 'e\\n' .. ARGV[6] .. '\\n' .. ARGV[9] .. '\\n' .. token .. '\\nreplaced by a newer stream')
    end
  end
end
redis.call('SET', claim, ARGV[1], 'PX', ARGV[4])
if ARGV[9] == '' then redis.call('DEL', detached) end
if redis.call('EXISTS', detached) == 0 then expire_session(ARGV[5]) end
local after = ARGV[3]
if after == '' then after = redis.call('GET', delivered) end
if after == '$' then
  local last = redis.call('XREVRANGE', replay, '+', '-', 'COUNT', 1)[1]
  return {1, {}, last and last[1] or '0-0'}
end
return {1, redis.call('XRANGE', replay, after or '-', '+'), after or '0-0'}
"""

# ARGV: owner, delivered id, resume window ms, '1' for the session's own stream. Only the claim's holder lets go;
# the session's own stream also records what it delivered and starts the resume window.
DETACH_SCRIPT = SESSION_TTL + """
if redis.call('GET', claim) ~= ARGV[1] then return 0 end
redis.call('DEL', claim)
if ARGV[4] ~= '1' then return 1 end
local ttl = redis.call('PTTL', session)
if ttl == -2 then return 0 end
if ARGV[2] ~= '' then redis.call('SET', delivered, ARGV[2], 'PX', math.max(ttl, 1)) end
local window = tonumber(ARGV[3])
if window <= 0 then
  redis.call('DEL', session, replay, replay_bytes, delivered)
  return 1
end
redis.call('SET', detached, '1', 'PX', window)
if ttl < 0 or ttl > window then expire_session(window) end
return 1
"""

# ARGV: owner, claim ttl ms, session ttl ms, delivered id ('' to leave it). Returns 0: session gone; 1: claim held
# (session in its resume window); 4: claim held and TTL moved (the caller moves the index too); 2: claim gone (the
# caller re-takes it if the stream is still open); 3: another stream holds it.
REFRESH_SCRIPT = SESSION_TTL + """
if redis.call('EXISTS', session) == 0 then return 0 end
local current = redis.call('GET', claim)
if not current then return 2 end
if current ~= ARGV[1] then return 3 end
redis.call('SET', claim, ARGV[1], 'PX', ARGV[2])
if ARGV[4] ~= '' then redis.call('SET', delivered, ARGV[4], 'PX', ARGV[3]) end
if redis.call('EXISTS', detached) == 0 then
  expire_session(ARGV[3])
  return 4
end
return 1
"""

# ARGV: session id, control channel. Every worker hears the close and ends its streams; the caller then takes it out
# of the index (another hash slot).
CLOSE_SCRIPT = SESSION_KEYS_LUA + """
local existed = redis.call('DEL', session)
redis.call('DEL', replay, replay_bytes, delivered, detached, claim)
redis.call('PUBLISH', ARGV[2], '{"op":"closed","session":"' .. ARGV[1] .. '"}')
return existed
"""

# KEYS: registry state, registry version. ARGV: field ([kind, key] as JSON), change JSON, control channel,
# origin worker, change id. Records and tells in one step, so versions are heard in order; a version is at least
# Redis's clock in ms, so versions keep growing after Redis lost its data. Returns {version, workers that heard}.
REGISTRY_SCRIPT = NOW_MS + """
local version = math.max(tonumber(redis.call('GET', KEYS[2]) or '0') + 1, now_ms)
local text = string.format('%.0f', version)
redis.call('SET', KEYS[2], text)
redis.call('HSET', KEYS[1], ARGV[1], '{"version":' .. text .. ',"change":' .. ARGV[2] .. '}')
local heard = redis.call('PUBLISH', ARGV[3], '{"op":"registry","origin":"' .. ARGV[4] .. '","id":"' .. ARGV[5]
                         .. '","version":' .. text .. ',"change":' .. ARGV[2] .. '}')
return {version, heard}
"""

# KEYS: index.
COUNT_SCRIPT = NOW_MS + """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now_ms)
return redis.call('ZCARD', KEYS[1])
"""


# A session's running calls: lease tokens scored by their end, renewed while the call runs (a killed worker's run
# out). KEYS: calls. ARGV: token, limit, lease ms. Returns 1 when the slot is taken, 0 when all are.
# Run-out leases (a killed worker's) are removed only when the set looks full: one command fewer per take.
TAKE_CALL_SLOT_SCRIPT = NOW_MS + """
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now_ms)
  if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
end
redis.call('ZADD', KEYS[1], now_ms + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"""

# KEYS: calls. ARGV: token, lease ms. A lease that already ran out stays out: its slot may be someone else's.
RENEW_CALL_SLOT_SCRIPT = NOW_MS + """
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now_ms + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
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
PUBLISH_SCRIPT = SESSION_KEYS_LUA + DATA_SIZE + """
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
-- The new entry goes to the worker holding its stream, if any holds it.
local owner = redis.call('GET', claim)
if owner then
  local worker = string.match(owner, '^([^|]*)|')
  redis.call('PUBLISH', ARGV[5] .. worker,
             'm\\n' .. ARGV[3] .. '\\n' .. ARGV[4] .. '\\n' .. id .. '\\n' .. ARGV[1])
end
return id
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
    "touch": TOUCH_SCRIPT,
    "registry": REGISTRY_SCRIPT,
    "take_call_slot": TAKE_CALL_SLOT_SCRIPT,
    "renew_call_slot": RENEW_CALL_SLOT_SCRIPT,
    "update": UPDATE_SCRIPT,
}
