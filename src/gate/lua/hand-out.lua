-- Hands out the parked items of these keys that have free places: places that freed without a finish
-- (a dead worker's lapsed leases, a limit raised).
-- ARGV[1]: the gate's settings and `ids`. Answers JSON: [{id, payload, priority}].
--- @include "includes/hand-out"

local a = cjson.decode(ARGV[1])
local keys = {}
for i, id in ipairs(a.ids) do keys[i] = { id = id, max = a.max } end
return cjson.encode(handOut(a, keys))
