-- The start of each item's job, right before its work: go, wait (ms, no attempt spent) or park.
--  - a paused key's item parks (and gives up a place or a booked start it had);
--  - an item with a booked start waits for it (a start booked after a hold, or paced);
--  - an item without a place, its key at its limit, parks, or waits OVER_LIMIT ms when it ran before (a
--    retry keeps its attempts);
--  - a held or paced key books the item a start and waits for it;
--  - an item that goes takes its place (a lease) and, with `slot`, the slot that keeps two starts of the
--    item `interval` ms apart (else it waits for the slot).
-- KEYS: the paused set, then the items' slots. ARGV[1]: the gate's settings, `interval` and `items`
-- ([{id, item, payload, max, paused (the owner's word), retried, slot?}]).
-- Answers per item a pair: code (0 go, 1 wait, 2 park) and ms.
--- @include "includes/gate"

local a = cjson.decode(ARGV[1])
local out = {}
for i, it in ipairs(a.items) do
  local g = a.gp .. it.id
  local R, B = g .. ':running', g .. ':booked'
  local code, ms = 0, 0
  if tonumber(redis.call('HGET', g, 'max')) ~= it.max then redis.call('HSET', g, 'max', it.max) end
  if it.paused or redis.call('SISMEMBER', a.paused, it.id) == 1 then
    redis.call('ZREM', R, it.item)
    redis.call('ZREM', B, it.item)
    code = 2
  else
    local booked = tonumber(redis.call('ZSCORE', B, it.item))
    if booked and booked > a.now + a.early then
      code, ms = 1, booked - a.now
    elseif booked then
      redis.call('ZREM', B, it.item)
    elseif not redis.call('ZSCORE', R, it.item) and runningOf(g, a.now) >= limitOf(g, it.max, a.slow) then
      if it.retried then code, ms = 1, a.overLimitMs else code = 2 end
    else
      -- Paced after a refusal (`gap`).
      local gap = tonumber(redis.call('HGET', g, 'gap')) or 0
      local t = math.max(a.now, tonumber(redis.call('HGET', g, 'held')) or 0, tonumber(redis.call('HGET', g, 'next')) or 0)
      if gap > 0 then redis.call('HSET', g, 'next', t + gap) end
      if t > a.now + a.early then
        redis.call('ZADD', B, t, it.item)
        redis.call('ZADD', R, t + a.lease, it.item)
        code, ms = 1, t - a.now
      end
    end
  end
  if code == 2 then park(g, a.now, it.item, it.payload) end
  if code == 0 then
    redis.call('ZADD', R, a.now + a.lease, it.item)
    if it.slot and a.interval > 0 and not redis.call('SET', it.slot, '1', 'PX', a.interval, 'NX') then
      code, ms = 1, math.max(1, redis.call('PTTL', it.slot))
    end
  end
  out[2 * i - 1] = code
  out[2 * i] = ms
end
return out
