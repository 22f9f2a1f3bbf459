-- The keys held or unreachable now, from the trouble set (includes/answer notes them there): each with
-- its view (includes/view). A key no longer held (its hold lapsed, or lifted by a resume) and answered
-- since is dropped from the set, so the set stays as small as the keys in trouble.
-- ARGV[1]: the gate's settings. Answers JSON: [{id, view}].
--- @include "includes/view"

local a = cjson.decode(ARGV[1])
local out = {}
for _, id in ipairs(redis.call('SMEMBERS', a.trouble)) do
  local v = viewOf(a, id)
  if (tonumber(v.held) or 0) > a.now or v.ur then
    out[#out + 1] = { id = id, view = v }
  else
    redis.call('SREM', a.trouble, id)
  end
end
return cjson.encode(out)
