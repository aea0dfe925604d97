-- held_key_release.lua: give a held key up, only if ARGV[1] still holds it.
-- KEYS[1] the key   ARGV[1] our id
-- Returns 1 released, 0 not ours (or already gone).
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
