-- SET NX PX per key, in one script: 0 for a key set now (this caller has it for its TTL), else how long
-- it stays taken. KEYS: the keys (one hash tag: on a Redis Cluster one slot). ARGV[i]: the TTL of KEYS[i],
-- whole milliseconds. One command for a whole batch of OAuth nonces.
local out = {}
for i, key in ipairs(KEYS) do
  if redis.call('SET', key, '1', 'PX', ARGV[i], 'NX') then
    out[i] = 0
  else
    out[i] = math.max(1, redis.call('PTTL', key))
  end
end
return out
