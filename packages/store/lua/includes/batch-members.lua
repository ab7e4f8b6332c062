--[[
  batch-members, included into start-batch and fail-batch when they are loaded (scripts.ts): the
  one rule for which members a batch answers, whether it runs them or answers them with an error.

  KEYS[first..last] are the members' claims ({<ns>:<model>}:claim:<requestId>). A claim that is free
  is taken for the batch; one the batch already holds is kept; one another batch (or a batcher's
  error answer, '!<reason>') holds is not this batch's to answer.
]]

-- How long a manifest or claim written again lives: as long as the manifest still does (create-batch
-- timed it by the deadlines), else fallbackTtl ms (the manifest expired, or Redis lost it).
local function batchTtl(manifest, fallbackTtl)
  local ttl = redis.call('PTTL', manifest)
  if ttl <= 0 then
    return tonumber(fallbackTtl)
  end
  return ttl
end

-- The members this batch answers, as 1-based positions among KEYS[first..last], claiming the free ones.
local function claimMembers(first, last, batchId, ttl)
  local mine = {}
  for i = first, last do
    local owner = redis.call('GET', KEYS[i])
    if not owner then
      redis.call('SET', KEYS[i], batchId, 'PX', ttl)
      mine[#mine + 1] = i - first + 1
    elseif owner == batchId then
      mine[#mine + 1] = i - first + 1
    end
  end
  return mine
end
