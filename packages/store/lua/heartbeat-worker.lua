--[[
  heartbeat-worker: a worker says it is alive and what it serves. Renews its
  device leases, records its description (models, tiers, lanes, load) with a
  TTL of a few heartbeats, and on its first beat marks the models it serves
  as wanted (so the mesh is not ready until they are). A worker that stops
  beating (killed, hung) drops out of the registry when its TTL lapses, and
  its leases lapse with it.

  If any lease is now held by another worker (this one stalled past the lease
  TTL and its device was taken), nothing is written: the worker must stop.

  Every key is the namespace registry's ({<ns>}), so they share one hash slot.

  KEYS[1]        live workers        {<ns>}:workers   (zset workerId -> expiry, ms)
  KEYS[2]        its description    {<ns>}:worker:<workerId>   (JSON string)
  KEYS[3]        model control      {<ns>}:control   (hash model -> '<load|unload>:<generation>')
  KEYS[4..]      its device leases  {<ns>}:lease:<node>:<kind>:<device>

  ARGV[1]        worker id
  ARGV[2]        now, ms since the epoch
  ARGV[3]        description TTL, ms (a few heartbeats)
  ARGV[4]        description, JSON
  ARGV[5]        lease TTL, ms
  ARGV[6]        registry pub/sub channel   <ns>:registry (a channel, not a key)
  ARGV[7]        '1': its description changed, publish 'worker:<workerId>' on the channel
  ARGV[8]        control TTL, ms (refreshed on every write)
  ARGV[9..]      models to mark wanted: each gets '<load>:0' unless the control hash has an entry

  Returns
    {1}            alive; leases renewed
    {-1, i, ...}   leases KEYS[3+i] (1-based among the leases) are held by another worker; nothing written
]]
local lost = {-1}
for i = 4, #KEYS do
  local holder = redis.call('GET', KEYS[i])
  if holder and holder ~= ARGV[1] then
    lost[#lost + 1] = i - 3
  end
end
if #lost > 1 then
  return lost
end
-- Writes start here.
local now = tonumber(ARGV[2])
local ttl = tonumber(ARGV[3])
local leaseTtl = tonumber(ARGV[5])
for i = 4, #KEYS do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', leaseTtl)
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
if ttl > redis.call('PTTL', KEYS[1]) then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
redis.call('SET', KEYS[2], ARGV[4], 'PX', ttl)
if #ARGV >= 9 then
  for i = 9, #ARGV do
    redis.call('HSETNX', KEYS[3], ARGV[i], 'load:0')
  end
end
if redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('PEXPIRE', KEYS[3], tonumber(ARGV[8]))
end
if ARGV[7] == '1' then
  redis.call('PUBLISH', ARGV[6], 'worker:' .. ARGV[1])
end
return {1}
