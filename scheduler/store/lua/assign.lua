-- assign.lua: move a queued task to a node's inbox, if it is still queued.
-- KEYS[1] queue ZSET        KEYS[2] node inbox LIST   KEYS[3] assignment HASH of the task
-- KEYS[4] assigned SET      KEYS[5] node doorbell LIST   KEYS[6] overdue ZSET   KEYS[7] queued-by HASH
-- ARGV[1] task id   ARGV[2] node   ARGV[3] gpu indices "0,1"   ARGV[4] now (ms)
-- ARGV[5] the revision of the task row the start was decided on ('' for none): its claim carries it, and
-- the node starts the task only if the row is still that revision
-- Returns 1 when assigned, 0 when the task had left the queue (cancelled, assigned elsewhere).
-- The queue and overdue scores, and the member whose index held the task, are kept in the assignment, so
-- an assignment its node never claims can go back in place. (The member index's own entry is left for the
-- next pass to drop: snapshot.lua.)
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score then
  return 0
end
local due = redis.call('ZSCORE', KEYS[6], ARGV[1])
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[6], ARGV[1])
redis.call('HSET', KEYS[3], 'node', ARGV[2], 'gpus', ARGV[3], 'assigned_ms', ARGV[4], 'score', score)
if due then
  redis.call('HSET', KEYS[3], 'due', due)
end
local member = redis.call('HGET', KEYS[7], ARGV[1])
if member then
  redis.call('HSET', KEYS[3], 'member', member)
  redis.call('HDEL', KEYS[7], ARGV[1])
end
if ARGV[5] and ARGV[5] ~= '' then
  redis.call('HSET', KEYS[3], 'revision', ARGV[5])
end
redis.call('SADD', KEYS[4], ARGV[1])
redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('RPUSH', KEYS[5], '1')
redis.call('LTRIM', KEYS[5], -1, -1)
return 1
