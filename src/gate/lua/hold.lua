-- Holds a key (a 429 met by a call that is not an item's work: a lead, a quote): as a throttled answer does.
-- ARGV[1]: the gate's settings, `id`, `retryAfterMs` (absent: the floor) and `why`.
--- @include "includes/answer"

local a = cjson.decode(ARGV[1])
answer(a, a.id, maxOf(a.gp .. a.id, a.max), { kind = 'throttled', retryAfterMs = a.retryAfterMs, why = a.why })
return 1
