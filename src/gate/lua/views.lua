-- What the gate knows of each id now (lapsed places dropped first).
-- ARGV[1]: the gate's settings and `ids`. Answers JSON: per id {held?, why?, ur?, urwhy?, lim?, max?, ans?,
-- running, parked} (a field the key never had is absent).
--- @include "includes/gate"

local a = cjson.decode(ARGV[1])
local out = {}
for i, id in ipairs(a.ids) do
  local g = a.gp .. id
  local f = redis.call('HMGET', g, 'held', 'why', 'ur', 'urwhy', 'lim', 'max', 'ans')
  out[i] = { held = f[1] or nil, why = f[2] or nil, ur = f[3] or nil, urwhy = f[4] or nil, lim = f[5] or nil, max = f[6] or nil, ans = f[7] or nil,
    running = runningOf(g, a.now), parked = redis.call('ZCARD', g .. ':parked') }
end
return cjson.encode(out)
