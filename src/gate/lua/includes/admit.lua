--- @include "gate"

-- Admits item `it` ({id, item, payload}): its place is taken and it answers its priority, the count of its
-- key's items queued or running (a key's first item goes ahead of a busy key's hundredth); or, its key
-- paused or at its limit, it is parked and answers 0.
local function admit(a, it)
  local g = a.gp .. it.id
  if redis.call('SISMEMBER', a.paused, it.id) == 0 then
    local R = g .. ':running'
    if redis.call('ZSCORE', R, it.item) or runningOf(g, a.now) < limitOf(g, maxOf(g, a.max), a.slow) then
      redis.call('ZADD', R, a.now + a.admitLease, it.item)
      return redis.call('ZCARD', R)
    end
  end
  park(g, a.now, it.item, it.payload)
  return 0
end
