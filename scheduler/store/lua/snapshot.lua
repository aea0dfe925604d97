-- snapshot.lua: what one scheduling pass reads, in one round trip and one consistent view.
-- KEYS[1] overdue ZSET   KEYS[2] queue ZSET   KEYS[3] assigned SET   KEYS[4] nodes SET   KEYS[5] leases ZSET
-- KEYS[6] members SET
-- ARGV[1] now (epoch s)   ARGV[2] window size   ARGV[3] key prefix   ARGV[4] first tasks per member (0: none)
-- Returns {overdue ids, queue head ids (2 x window), {id, node, gpus, ...} of each unclaimed assignment,
-- leased ids, {name, {field, value, ...}, ...} of each registered node, the earliest lease expiry (ms) or
-- '' when no task holds a lease, {member, id, ...}: the first ARGV[4] queued ids of each member's index}.
-- A member index entry whose task is no longer queued (assigned, cancelled, held) is dropped as it is read
-- past, and a member left with none leaves the members set.
-- The assignment and node hashes are named from the prefix (a standalone Redis, as nightshift runs).
local count = tonumber(ARGV[2])
local overdue = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, count)
local head = redis.call('ZRANGE', KEYS[2], 0, 2 * count - 1)
local assignments = {}
for _, task in ipairs(redis.call('SMEMBERS', KEYS[3])) do
  local fields = redis.call('HMGET', ARGV[3] .. 'assign:' .. task, 'node', 'gpus')
  -- a member without its hash ('' as node) is reported too: the caller treats it as possibly leased
  assignments[#assignments + 1] = task
  assignments[#assignments + 1] = fields[1] or ''
  assignments[#assignments + 1] = fields[2] or ''
end
local nodes = {}
for _, name in ipairs(redis.call('SMEMBERS', KEYS[4])) do
  local raw = redis.call('HGETALL', ARGV[3] .. 'node:' .. name)
  if #raw > 0 then
    nodes[#nodes + 1] = name
    nodes[#nodes + 1] = raw
  end
end
local leased = redis.call('ZRANGE', KEYS[5], 0, -1)
local first = redis.call('ZRANGE', KEYS[5], 0, 0, 'WITHSCORES')
local per = tonumber(ARGV[4]) or 0
local heads = {}
if per > 0 then
  for _, member in ipairs(redis.call('SMEMBERS', KEYS[6])) do
    local key = ARGV[3] .. 'queue:member:' .. member
    local kept = 0
    while kept < per do
      local ids = redis.call('ZRANGE', key, kept, per - 1)
      if #ids == 0 then
        break
      end
      for _, task in ipairs(ids) do
        if redis.call('ZSCORE', KEYS[2], task) then
          heads[#heads + 1] = member
          heads[#heads + 1] = task
          kept = kept + 1
        else
          redis.call('ZREM', key, task)
        end
      end
    end
    if redis.call('ZCARD', key) == 0 then
      redis.call('SREM', KEYS[6], member)
    end
  end
end
return {overdue, head, assignments, leased, nodes, first[2] or '', heads}
