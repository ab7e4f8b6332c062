--[[
  claim-devices: a worker takes exclusive leases on k devices of its machine,
  so replicas started without ids (docker compose --scale) each get their own.
  All or nothing: with fewer than k free, nothing is written and the worker
  waits for a lease to lapse (its holder died) or be released.

  A lease is a key holding the worker id, with a TTL the worker renews on
  every heartbeat (heartbeat-worker); a dead worker's leases lapse by
  themselves. A lease already held by the caller counts as free.

  Every key is the namespace registry's ({<ns>}), so they share one hash slot.

  KEYS[1..n]   candidate leases, in order of preference
               {<ns>}:lease:<node>:<kind>:<device>

  ARGV[1]      worker id
  ARGV[2]      lease TTL, ms
  ARGV[3]      k, how many to claim (1 <= k <= n)

  Returns
    {1, i1, ..., ik}   claimed KEYS[i1..ik] (1-based, ascending)
    {0, free}          only `free` < k candidates are free; nothing written
]]
local k = tonumber(ARGV[3])
local picked = {}
for i = 1, #KEYS do
  local holder = redis.call('GET', KEYS[i])
  if not holder or holder == ARGV[1] then
    picked[#picked + 1] = i
    if #picked == k then
      break
    end
  end
end
if #picked < k then
  return {0, #picked}
end
-- Writes start here.
local ttl = tonumber(ARGV[2])
for _, i in ipairs(picked) do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ttl)
end
table.insert(picked, 1, 1)
return picked
