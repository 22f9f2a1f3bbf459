-- Holds a key (a 429 met by a call that is not an item's work: a lead, a quote): as a throttled answer does.
-- KEYS[1]: the paused set. ARGV[1]: {gp, now, slow, floor, minRate, rateStep, unpacedRate, max, id,
-- retryAfterMs?, why}.
--- @include "includes/answer"

local a = cjson.decode(ARGV[1])
local g = a.gp .. a.id
answer(a, g, maxOf(g, a.max), { kind = 'throttled', retryAfterMs = a.retryAfterMs, why = a.why })
return 1
