-- Holds a key (a 429 met by a call that is not an item's work: a lead, a quote): as a throttled answer does.
-- ARGV[1]: the gate's settings, `id`, `retryAfterMs` (absent: the floor) and `why`.
--- @include "includes/answer"

local a = cjson.decode(ARGV[1])
local g = a.gp .. a.id
answer(a, g, maxOf(g, a.max), { kind = 'throttled', retryAfterMs = a.retryAfterMs, why = a.why })
return 1
