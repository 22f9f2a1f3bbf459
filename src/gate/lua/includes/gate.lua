-- The gate's shared parts (src/gate/gate.ts documents the keys). Every script is called with one JSON
-- argument, ARGV[1], decoded into `a`: the gate's settings (gate.ts fields(): `gp` the prefix of the keys'
-- hashes, `paused` the set of paused ids, `trouble` the set of ids held or unanswered, `now` the caller's clock in ms, `max` the default limit, `slow`,
-- `admitLease`, `lease`, `floor`, `early`, `overLimitMs`, `minRate`, `rateStep`, `unpacedRate`) and the
-- call's own fields. KEYS[1] is the paused set.

-- The limit a key runs at now: `lim` (slow start from `slow`, halved on a refusal), never above its max.
local function limitOf(g, max, slow)
  local lim = tonumber(redis.call('HGET', g, 'lim')) or math.min(max, slow)
  return math.max(1, math.min(max, math.floor(lim)))
end

-- How many of a key's items hold a place now; places whose lease lapsed (a dead worker's) are freed first.
local function runningOf(g, now)
  local R = g .. ':running'
  redis.call('ZREMRANGEBYSCORE', R, '-inf', now)
  return redis.call('ZCARD', R)
end

-- Parks an item: no job exists for it until a place frees (hand-out) or its key resumes.
local function park(g, now, item, payload)
  redis.call('ZADD', g .. ':parked', 'NX', now, item .. ' ' .. payload)
end

-- A key's own max (set by the last start or by setMax), else `default`.
local function maxOf(g, default)
  return tonumber(redis.call('HGET', g, 'max')) or default
end
