-- restore.lua: put back what SQL says should be in Redis, without disturbing what is already there.
-- Used by the rebuild after Redis lost data or entries.
-- KEYS[1] queue ZSET   KEYS[2] lease HASH of the task   KEYS[3] assignment HASH of the task
-- KEYS[4] leases ZSET   KEYS[5] overdue ZSET   KEYS[6] queued-by HASH   KEYS[7] members SET
-- ARGV[1] task id   ARGV[2] "queued" or "running"   ARGV[3] score (queued) or token (running)
-- ARGV[4] node (running)   ARGV[5] gpus (running)   ARGV[6] lease expiry (ms, running)
-- ARGV[7] overdue time (queued; '' for none)   ARGV[8] member "team/person" (queued; '' for none)
-- ARGV[9] key prefix (member indexes)
-- Returns 1 when something was restored, 0 when Redis already knew the task.
-- A queued task always ends up in both sorted sets (a queue entry missing from the overdue index, as one
-- enqueued before the index existed, is indexed here), and in its member's index.
if redis.call('EXISTS', KEYS[2]) == 1 or redis.call('EXISTS', KEYS[3]) == 1 then
  return 0
end
if ARGV[2] == 'queued' then
  local added = redis.call('ZADD', KEYS[1], 'NX', ARGV[3], ARGV[1])
  if ARGV[7] ~= '' then
    added = math.max(added, redis.call('ZADD', KEYS[5], 'NX', ARGV[7], ARGV[1]))
  end
  if ARGV[8] ~= '' then
    redis.call('ZADD', ARGV[9] .. 'queue:member:' .. ARGV[8], 'NX', ARGV[3], ARGV[1])
    redis.call('SADD', KEYS[7], ARGV[8])
    redis.call('HSET', KEYS[6], ARGV[1], ARGV[8])
  end
  return added
end
redis.call('HSET', KEYS[2], 'node', ARGV[4], 'token', ARGV[3], 'gpus', ARGV[5], 'expires_ms', ARGV[6])
redis.call('ZADD', KEYS[4], ARGV[6], ARGV[1])
return 1
