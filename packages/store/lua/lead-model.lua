--[[
  lead-model: take or renew the lead of a model whose requests one batcher
  at a time must batch (preserve_ordering), or give it up. The lead lapses
  when its holder stops renewing it (crash), so a standby batcher takes over.

  KEYS[1]   the model's lead   {<ns>:<model>}:lead

  ARGV[1]   token of the batcher asking
  ARGV[2]   TTL, ms; 0 = give the lead up (only when ARGV[1] holds it)

  Returns
    1   ARGV[1] holds the lead (taken or renewed), or gave it up
    0   another batcher holds it; nothing written
]]
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then
  return 0
end
local ttl = tonumber(ARGV[2])
if ttl == 0 then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
end
return 1
