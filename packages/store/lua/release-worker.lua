--[[
  release-worker: a worker that drained (or gave up starting) leaves the
  registry and frees its device leases at once, so a replacement can take
  them without waiting for the TTL. Leases held by another worker are left
  alone.

  Every key is the namespace registry's ({<ns>}), so they share one hash slot.

  KEYS[1]      live workers        {<ns>}:workers
  KEYS[2]      its description    {<ns>}:worker:<workerId>
  KEYS[3..]    its device leases  {<ns>}:lease:<node>:<kind>:<device>

  ARGV[1]      worker id
  ARGV[2]      registry pub/sub channel   <ns>:registry (a channel, not a key)

  Returns
    the number of leases released
]]
local released = 0
for i = 3, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    released = released + 1
  end
end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[2])
redis.call('PUBLISH', ARGV[2], 'worker:' .. ARGV[1])
return released
