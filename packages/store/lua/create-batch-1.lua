--[[
  create-batch: record a newly formed batch and claim its requests for it.

  KEYS[1]      batch manifest hash        <ns>:batch:<batchId>
  KEYS[2..N]   one claim key per member   <ns>:claim:<requestId>

  ARGV[1]      batchId
  ARGV[2]      TTL of the manifest and the claims, ms
  ARGV[3]      model
  ARGV[4]      version
  ARGV[5]      tier
  ARGV[6]      rows (real rows; tier - rows are padding)
  ARGV[7]      members, msgpack array of {id, rows, replyTo, correlationId, deadline}
  ARGV[8]      now, ms since the epoch

  Returns
    {1}                  created; every member is now claimed by this batch
    {-1}                 a manifest with this id already exists (nothing written)
    {-2, i, j, ...}      members i, j (1-based) are already claimed by another
                         batch; nothing written, so the caller can drop them and retry
]]
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {-1}
end
local taken = {}
for i = 2, #KEYS do
  local owner = redis.call('GET', KEYS[i])
  if owner and owner ~= ARGV[1] then
    taken[#taken + 1] = i - 1
  end
end
if #taken > 0 then
  table.insert(taken, 1, -2)
  return taken
end
local ttl = tonumber(ARGV[2])
redis.call('HSET', KEYS[1],
  'model', ARGV[3], 'version', ARGV[4], 'tier', ARGV[5], 'rows', ARGV[6],
  'members', ARGV[7], 'state', 'formed', 'createdAt', ARGV[8], 'updatedAt', ARGV[8])
redis.call('PEXPIRE', KEYS[1], ttl)
for i = 2, #KEYS do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ttl)
end
return {1}
