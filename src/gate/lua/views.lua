-- What the gate knows of each id now (includes/view).
-- ARGV[1]: the gate's settings and `ids`. Answers JSON: per id its view.
--- @include "includes/view"

local a = cjson.decode(ARGV[1])
local out = {}
for i, id in ipairs(a.ids) do out[i] = viewOf(a, id) end
return cjson.encode(out)
