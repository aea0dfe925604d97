-- expire.lua: the reaper takes a lease whose time is up, so its task can be requeued.
-- KEYS[1] lease HASH of the task   KEYS[2] leases ZSET
-- ARGV[1] task id   ARGV[2] now (ms)
-- Returns the expired token, or nil when the lease was renewed (or released) meanwhile.
local expires = tonumber(redis.call('HGET', KEYS[1], 'expires_ms') or '0')
if expires == 0 then
  redis.call('ZREM', KEYS[2], ARGV[1])
  return nil
end
if expires > tonumber(ARGV[2]) then
  return nil
end
local token = redis.call('HGET', KEYS[1], 'token')
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return token
