-- unassign.lua: give an assignment its node never claimed (the node died) back to the queue, atomically.
-- KEYS[1] queue ZSET   KEYS[2] node inbox LIST   KEYS[3] assignment HASH of the task   KEYS[4] assigned SET
-- KEYS[5] overdue ZSET   KEYS[6] queued-by HASH   KEYS[7] members SET
-- ARGV[1] task id   ARGV[2] node the task must still be assigned to   ARGV[3] score if none was kept
-- ARGV[4] overdue time if none was kept ('' for none)   ARGV[5] key prefix (member indexes)
-- Returns 1 when the task is back in the queue, 0 when it was claimed (or unassigned) meanwhile.
if redis.call('HGET', KEYS[3], 'node') ~= ARGV[2] then
  return 0
end
local score = redis.call('HGET', KEYS[3], 'score') or ARGV[3]
local due = redis.call('HGET', KEYS[3], 'due') or ARGV[4]
local member = redis.call('HGET', KEYS[3], 'member')
redis.call('LREM', KEYS[2], 0, ARGV[1])
redis.call('DEL', KEYS[3])
redis.call('SREM', KEYS[4], ARGV[1])
redis.call('ZADD', KEYS[1], 'NX', score, ARGV[1])
if due ~= '' then
  redis.call('ZADD', KEYS[5], 'NX', due, ARGV[1])
end
if member then
  redis.call('ZADD', ARGV[5] .. 'queue:member:' .. member, 'NX', score, ARGV[1])
  redis.call('SADD', KEYS[7], member)
  redis.call('HSET', KEYS[6], ARGV[1], member)
end
return 1
