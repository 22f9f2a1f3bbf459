-- The end of items' work: each gives its place back and its key learns what the far side answered
-- (includes/answer, against the item's max); then each key hands out as many parked items as it has free places.
-- ARGV[1]: the gate's settings and `items` ([{id, item, max, answer: {kind, retryAfterMs?, why?}}]).
-- Answers JSON: [{id, payload, priority}].
--- @include "includes/answer"
--- @include "includes/hand-out"

local a = cjson.decode(ARGV[1])
for _, it in ipairs(a.items) do
  local g = a.gp .. it.id
  redis.call('ZREM', g .. ':running', it.item)
  answer(a, it.id, it.max, it.answer)
end
return cjson.encode(handOut(a, a.items))
