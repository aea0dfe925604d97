-- snapshot.lua: what one scheduling pass reads, in one round trip and one consistent view.
-- KEYS[1] overdue ZSET   KEYS[2] queue ZSET   KEYS[3] assigned SET   KEYS[4] nodes SET   KEYS[5] leases ZSET
-- ARGV[1] now (epoch s)   ARGV[2] window size   ARGV[3] key prefix
-- Returns {overdue ids, queue head ids (2 x window), {id, node, gpus, ...} of each unclaimed assignment,
-- leased ids, {name, {field, value, ...}, ...} of each registered node, the earliest lease expiry (ms) or
-- '' when no task holds a lease}.
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
return {overdue, head, assignments, leased, nodes, first[2] or ''}
