--- @include "gate"

-- What the gate knows of key `id` now (lapsed places dropped first): {held?, why?, ur?, urwhy?, lim?, max?,
-- ans?, running, parked} (a field the key never had is absent).
local function viewOf(a, id)
  local g = a.gp .. id
  local f = redis.call('HMGET', g, 'held', 'why', 'ur', 'urwhy', 'lim', 'max', 'ans')
  return { held = f[1] or nil, why = f[2] or nil, ur = f[3] or nil, urwhy = f[4] or nil, lim = f[5] or nil, max = f[6] or nil, ans = f[7] or nil,
    running = runningOf(g, a.now), parked = redis.call('ZCARD', g .. ':parked') }
end
