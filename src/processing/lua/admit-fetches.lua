-- The admission of a batch of fetches after a commit (processing/enqueue.ts), in one round trip: a resource
-- whose key's job covers it already (covered) needs no add and answers -1; each other one is admitted at
-- its company's gate (the gate's admit: its job's priority) or parked there (0).
-- KEYS[1]: the paused set. ARGV[1]: the gate's settings (src/gate/gate.ts fields()), `queue` ({dedup, job,
-- delayed}) and `items` ([{id: company id, item: fetch key, payload: href}]).
--- @include "../../gate/lua/includes/admit"
--- @include "covered"

local a = cjson.decode(ARGV[1])
local out = {}
for i, it in ipairs(a.items) do
  if covered(a.queue, it.item) then out[i] = -1 else out[i] = admit(a, it) end
end
return out
