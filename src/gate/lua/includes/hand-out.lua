--- @include "gate"

-- Hands out, for each key of `keys` ({id, max}: its max if the gate has none) not paused, as many parked
-- items as it has free places, oldest first, their places taken: answers them as {id, payload, priority}
-- (the caller adds their jobs).
local function handOut(a, keys)
  local out, seen = {}, {}
  for _, key in ipairs(keys) do
    local id = key.id
    if not seen[id] then
      seen[id] = true
      local g = a.gp .. id
      if redis.call('SISMEMBER', a.paused, id) == 0 then
        local free = limitOf(g, maxOf(g, key.max), a.slow) - runningOf(g, a.now)
        if free > 0 then
          local popped = redis.call('ZPOPMIN', g .. ':parked', free)
          for j = 1, #popped, 2 do
            local sep = string.find(popped[j], ' ', 1, true)
            redis.call('ZADD', g .. ':running', a.now + a.admitLease, string.sub(popped[j], 1, sep - 1))
            out[#out + 1] = { id = id, payload = string.sub(popped[j], sep + 1), priority = redis.call('ZCARD', g .. ':running') }
          end
        end
      end
    end
  end
  return out
end
