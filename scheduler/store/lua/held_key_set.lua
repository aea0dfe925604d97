-- held_key_set.lua: make ARGV[2] the holder of a held key (a node's owner, the scheduler's leader lock) if
-- the key is free or still held by ARGV[1]. Holding and renewing pass our own id twice (and take the key
-- again if Redis lost it); taking over a holder whose process is gone passes that holder's id, so a holder
-- that changed meanwhile is left alone.
-- KEYS[1] the key   ARGV[1] the holder expected   ARGV[2] the new holder   ARGV[3] ttl ms
-- Returns 1 set, 0 someone else holds it.
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then
  return 0
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
