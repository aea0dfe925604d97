-- renew.lua: a worker's heartbeat extends its lease, only if the lease is still its own.
-- KEYS[1] lease HASH of the task   KEYS[2] leases ZSET   KEYS[3] cancel flag of the task
-- ARGV[1] task id   ARGV[2] token   ARGV[3] now (ms)   ARGV[4] lease ttl (ms)
-- Returns 1 renewed, 2 renewed but a cancel was requested, 0 the lease belongs to another claim,
-- -1 no lease at all (expired and reaped, or Redis lost its data: the worker asks SQL).
local token = redis.call('HGET', KEYS[1], 'token')
if not token then
  return -1
end
if token ~= ARGV[2] then
  return 0
end
local expires = tonumber(ARGV[3]) + tonumber(ARGV[4])
redis.call('HSET', KEYS[1], 'expires_ms', expires)
redis.call('ZADD', KEYS[2], expires, ARGV[1])
if redis.call('EXISTS', KEYS[3]) == 1 then
  return 2
end
return 1
