--[[
  create-batch: record a newly formed batch, take a lane slot for it, claim
  its requests for it and take them out of their admission queues; all or
  nothing (every check runs before the first write).

  A claim names the batch that will answer the request, or '!<reason>' when a
  batcher already answered it with an error. A claim held by a batch still in
  state 'formed' is taken over: that batch's batcher died before its publish
  was confirmed (otherwise the request could not have been redelivered), and
  if the batch did reach a worker, start-batch skips the members it lost.

  KEYS[1]          batch manifest hash                <ns>:batch:<batchId>
  KEYS[2]          the model's in-flight batches      <ns>:inflight:<model>  (zset batchId -> expiry, ms)
  KEYS[3..2+n]     one claim per member               <ns>:claim:<requestId>
  KEYS[3+n..]      admission queues the members leave <ns>:queue:<model>:<level>

  ARGV[1]          batchId
  ARGV[2]          TTL of the manifest and the claims, ms
  ARGV[3]          model
  ARGV[4]          version
  ARGV[5]          tier
  ARGV[6]          rows (real rows; tier - rows are padding)
  ARGV[7]          members, msgpack array of {id, rows, replyTo, correlationId, deadline}
  ARGV[8]          now, ms since the epoch
  ARGV[9]          n, the number of members
  ARGV[10]         most batches in flight for the model (0 = no limit)
  ARGV[11]         when the in-flight entry lapses if no worker finishes the batch, ms since the epoch
  ARGV[12]         manifest key prefix <ns>:batch: (reads the state of a batch holding a claim;
                   single-instance Redis, as the mesh uses)
  ARGV[13..12+n]   the members' request ids

  Returns
    {1}               created
    {-1}              a manifest with this id already exists; nothing written
    {-2, i, j, ...}   members i, j (1-based) are carried by a batch past 'formed', or were
                      answered; nothing written (the caller drops them and retries the rest)
    {-3, inflight}    no lane slot: the model has inflight >= limit batches; nothing written
]]
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {-1}
end
local n = tonumber(ARGV[9])
local now = tonumber(ARGV[8])
local taken = {}
local abandoned = {}
for i = 1, n do
  local owner = redis.call('GET', KEYS[2 + i])
  if owner and owner ~= ARGV[1] then
    if string.sub(owner, 1, 1) == '!' then
      taken[#taken + 1] = i
    else
      local state = redis.call('HGET', ARGV[12] .. owner, 'state')
      if state and state ~= 'formed' then
        taken[#taken + 1] = i
      else
        abandoned[owner] = true
      end
    end
  end
end
if #taken > 0 then
  table.insert(taken, 1, -2)
  return taken
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local limit = tonumber(ARGV[10])
if limit > 0 then
  local inflight = redis.call('ZCARD', KEYS[2])
  for owner in pairs(abandoned) do
    if redis.call('ZSCORE', KEYS[2], owner) then
      inflight = inflight - 1
    end
  end
  if inflight >= limit then
    return {-3, inflight}
  end
end
-- Writes start here.
for owner in pairs(abandoned) do
  redis.call('ZREM', KEYS[2], owner)
end
local ttl = tonumber(ARGV[2])
redis.call('HSET', KEYS[1],
  'model', ARGV[3], 'version', ARGV[4], 'tier', ARGV[5], 'rows', ARGV[6],
  'members', ARGV[7], 'state', 'formed', 'createdAt', ARGV[8], 'updatedAt', ARGV[8])
redis.call('PEXPIRE', KEYS[1], ttl)
for i = 1, n do
  redis.call('SET', KEYS[2 + i], ARGV[1], 'PX', ttl)
end
redis.call('ZADD', KEYS[2], ARGV[11], ARGV[1])
local pttl = tonumber(ARGV[11]) - now
if pttl > redis.call('PTTL', KEYS[2]) then
  redis.call('PEXPIRE', KEYS[2], pttl)
end
for k = 3 + n, #KEYS do
  redis.call('ZREM', KEYS[k], unpack(ARGV, 13, 12 + n))
end
return {1}
