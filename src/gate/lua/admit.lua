-- Admission: each item gets its place (answers its priority) or is parked (answers 0).
-- KEYS[1]: the paused set. ARGV[1]: {gp, paused, now, max, slow, lease, items: [{id, item, payload}]}.
--- @include "includes/admit"

local a = cjson.decode(ARGV[1])
local out = {}
for i, it in ipairs(a.items) do out[i] = admit(a, it) end
return out
