--- @include "gate"

-- Applies what the far side answered (`ans`: {kind, retryAfterMs?, why?}) to key `id` whose max is `max`.
--  throttled: held until now + max(Retry-After, floor); the limit halved; starts paced at half the rate;
--  answered:  the limit grows (by one, or by 1/limit per answer after a refusal), the pace speeds up;
--  no_answer: marked unreachable since the first one (until an answer comes).
-- A key held or unreachable is noted in the trouble set (`a.trouble`), which troubled.lua reads and prunes.
local function answer(a, id, max, ans)
  local g = a.gp .. id
  if ans.kind == 'throttled' then
    local held = math.max(tonumber(redis.call('HGET', g, 'held')) or 0, a.now + math.max(tonumber(ans.retryAfterMs) or 0, a.floor))
    local lim = limitOf(g, max, a.slow)
    local gap = tonumber(redis.call('HGET', g, 'gap')) or 0
    local rate = math.max(a.minRate, (gap > 0 and 1000 / gap or lim) / 2)
    redis.call('HSET', g, 'held', held, 'why', ans.why or '', 'lim', math.max(1, math.floor(lim / 2)), 'ss', 1, 'gap', 1000 / rate)
    redis.call('HDEL', g, 'ur', 'urwhy')
    redis.call('SADD', a.trouble, id)
  elseif ans.kind == 'answered' then
    redis.call('HDEL', g, 'ur', 'urwhy')
    redis.call('HSET', g, 'ans', a.now)
    local lim = tonumber(redis.call('HGET', g, 'lim')) or math.min(max, a.slow)
    if lim < max then
      if redis.call('HEXISTS', g, 'ss') == 1 then lim = lim + 1 / lim else lim = lim + 1 end
      redis.call('HSET', g, 'lim', math.min(max, lim))
    end
    local gap = tonumber(redis.call('HGET', g, 'gap')) or 0
    if gap > 0 then
      local rate = 1000 / gap
      rate = rate + a.rateStep / rate
      if rate >= a.unpacedRate then redis.call('HDEL', g, 'gap', 'next') else redis.call('HSET', g, 'gap', 1000 / rate) end
    end
  elseif ans.kind == 'no_answer' then
    if redis.call('HSETNX', g, 'ur', a.now) == 1 then
      redis.call('HSET', g, 'urwhy', ans.why or '')
      redis.call('SADD', a.trouble, id)
    end
  end
end
