-- release.lua: drop a lease when its task has finished, only if the lease is still this claim's.
-- KEYS[1] lease HASH of the task   KEYS[2] leases ZSET   KEYS[3] cancel flag of the task
-- ARGV[1] task id   ARGV[2] token
-- Returns 1 released, 0 not ours (or already gone).
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[2] then
  return 0
end
redis.call('DEL', KEYS[1], KEYS[3])
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
