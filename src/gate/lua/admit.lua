-- Admission: each item gets its place (answers its priority) or is parked (answers 0).
-- ARGV[1]: the gate's settings and `items` ([{id, item, payload}]).
--- @include "includes/admit"

local a = cjson.decode(ARGV[1])
local out = {}
for i, it in ipairs(a.items) do out[i] = admit(a, it) end
return out
