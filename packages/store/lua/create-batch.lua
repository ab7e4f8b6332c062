--[[
  create-batch: record a newly formed batch, take a lane slot for it, claim
  its requests for it and take them out of their admission queues; all or
  nothing (every check runs before the first write).

  A claim names the batch that will answer the request, or '!<reason>' when a
  batcher already answered it with an error. A claim held by a batch still in
  state 'formed' is taken over (see includes/claim-taken): that batch's batcher
  died before its publish was confirmed, and if the batch did reach a worker,
  start-batch skips the members it lost.

  Every key is the batch's model's ({<ns>:<model>}), so they share one hash slot.

  KEYS[1]            batch manifest hash                 {<ns>:<model>}:batch:<batchId>
  KEYS[2]            the model's in-flight batches       {<ns>:<model>}:inflight  (zset batchId -> expiry, ms)
  KEYS[3..2+n]       one claim per member                {<ns>:<model>}:claim:<requestId>
  KEYS[3+n..2+n+q]   admission queues the members leave  {<ns>:<model>}:queue:<level>
  KEYS[3+n+q..]      manifests of batches that hold some member's claim, as far as the caller
                     knows (none at first)               {<ns>:<model>}:batch:<owner>

  ARGV[1]            batchId
  ARGV[2]            TTL of the manifest and the claims, ms
  ARGV[3]            model
  ARGV[4]            version
  ARGV[5]            tier
  ARGV[6]            rows (real rows; tier - rows are padding)
  ARGV[7]            members, msgpack array of {id, rows, replyTo, correlationId, deadline}
  ARGV[8]            now, ms since the epoch
  ARGV[9]            n, the number of members
  ARGV[10]           most batches in flight for the model (0 = no limit)
  ARGV[11]           when the in-flight entry lapses if no worker finishes the batch, ms since the epoch
  ARGV[12]           q, the number of admission queues
  ARGV[13..12+n]     the members' request ids
  ARGV[13+n..]       the owners' batch ids, one per manifest in KEYS[3+n+q..]

  Returns
    {1}                  created
    {-1, i, j, ...}      a manifest with this id already exists: the batch reached a worker before
                         this call and start-batch wrote it (it takes free claims only). Members
                         i, j (1-based) are not held by this batch; the others leave their
                         admission queues, and a manifest start-batch wrote gets this call's
                         details and, while it runs, a lane slot (no limit: it runs already).
                         A manifest create-batch wrote is left as it is.
    {-2, i, j, ...}      members i, j (1-based) are carried by a batch past 'formed', or were
                         answered; nothing written (the caller drops them and retries the rest)
    {-3, inflight}       no lane slot: the model has inflight >= limit batches; nothing written
    {-4, owner, ...}     claims are held by these batches, whose manifests were not declared;
                         nothing written (the caller calls again with them)
]]
--- @include "includes/claim-taken"

local n = tonumber(ARGV[9])
local q = tonumber(ARGV[12])
local now = tonumber(ARGV[8])

-- The model's in-flight entry for this batch, lapsing at ARGV[11]; the set lives as long as its last entry.
local function takeLaneSlot()
  redis.call('ZADD', KEYS[2], ARGV[11], ARGV[1])
  local pttl = tonumber(ARGV[11]) - now
  if pttl > redis.call('PTTL', KEYS[2]) then
    redis.call('PEXPIRE', KEYS[2], pttl)
  end
end

-- The batch's details, with any further fields given as name, value pairs.
local function writeDetails(...)
  redis.call('HSET', KEYS[1],
    'model', ARGV[3], 'version', ARGV[4], 'tier', ARGV[5], 'rows', ARGV[6],
    'members', ARGV[7], 'createdAt', ARGV[8], ...)
end

-- The requests `ids` leave their admission queues (KEYS[3+n..2+n+q]).
local function leaveQueues(ids)
  if #ids == 0 then
    return
  end
  for k = 3 + n, 2 + n + q do
    redis.call('ZREM', KEYS[k], unpack(ids))
  end
end

if redis.call('EXISTS', KEYS[1]) == 1 then
  local exists = {-1}
  local held = {}
  for i = 1, n do
    if redis.call('GET', KEYS[2 + i]) ~= ARGV[1] then
      exists[#exists + 1] = i
    else
      held[#held + 1] = ARGV[12 + i]
    end
  end
  if redis.call('HEXISTS', KEYS[1], 'model') == 0 then
    -- start-batch wrote it: the batch was published ahead of this call (an idle lane's batch).
    leaveQueues(held)
    writeDetails()
    if redis.call('HGET', KEYS[1], 'state') == 'running' then
      takeLaneSlot()
    end
  end
  return exists
end
local manifests = declaredManifests(3 + n + q, 13 + n)
local taken = {}
local undeclared = {-4}
local listed = {}
local abandoned = {}
for i = 1, n do
  local owner = redis.call('GET', KEYS[2 + i])
  if owner and owner ~= ARGV[1] then
    local t = claimTaken(owner, manifests)
    if t == nil then
      if not listed[owner] then
        undeclared[#undeclared + 1] = owner
        listed[owner] = true
      end
    elseif t then
      taken[#taken + 1] = i
    else
      abandoned[owner] = true
    end
  end
end
if #undeclared > 1 then
  return undeclared
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
writeDetails('state', 'formed', 'updatedAt', ARGV[8])
redis.call('PEXPIRE', KEYS[1], ttl)
for i = 1, n do
  redis.call('SET', KEYS[2 + i], ARGV[1], 'PX', ttl)
end
takeLaneSlot()
leaveQueues({unpack(ARGV, 13, 12 + n)})
return {1}
