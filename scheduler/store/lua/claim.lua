-- claim.lua: a worker takes the next tasks assigned to its node and leases them, atomically.
-- KEYS[1] node inbox LIST   KEYS[2] leases ZSET   KEYS[3] fence counter   KEYS[4] assigned SET
-- KEYS[5] epoch STRING
-- ARGV[1] node   ARGV[2] now (ms)   ARGV[3] lease ttl (ms)   ARGV[4] key prefix   ARGV[5] most to take
-- Returns a flat list {task id, fencing token, gpus, revision ('' for none), ...}: empty when the inbox is
-- empty.
-- Each token is "<epoch>-<counter>": unique even if Redis loses its data and the counter restarts.
-- Without an epoch (Redis lost its data and has not been rebuilt yet) nothing is claimed.
local epoch = redis.call('GET', KEYS[5])
if not epoch then
  return {}
end
local limit = tonumber(ARGV[5]) or 1
local expires = tonumber(ARGV[2]) + tonumber(ARGV[3])
local out = {}
while #out < 4 * limit do
  local task = redis.call('LPOP', KEYS[1])
  if not task then
    break
  end
  local assign_key = ARGV[4] .. 'assign:' .. task
  local gpus = redis.call('HGET', assign_key, 'gpus')
  local node = redis.call('HGET', assign_key, 'node')
  local revision = redis.call('HGET', assign_key, 'revision') or ''
  -- an inbox entry without its assignment (cancelled meanwhile, or for another node) is skipped;
  -- an assignment to another node is that node's (a stale entry here must not delete it)
  if node == ARGV[1] or not node then redis.call('DEL', assign_key); redis.call('SREM', KEYS[4], task) end
  if gpus and node == ARGV[1] then
    local token = epoch .. '-' .. redis.call('INCR', KEYS[3])
    redis.call('HSET', ARGV[4] .. 'lease:' .. task,
      'node', ARGV[1], 'token', token, 'gpus', gpus, 'expires_ms', expires)
    redis.call('ZADD', KEYS[2], expires, task)
    out[#out + 1] = task
    out[#out + 1] = token
    out[#out + 1] = gpus
    out[#out + 1] = revision
  end
end
return out
