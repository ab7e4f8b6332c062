--[[
  claim-taken, included into create-batch, expire-request and reclaim-request when they are
  loaded (scripts.ts): the one rule for whether a request's claim keeps the request from being
  batched or answered again.

  A claim holds the id of the batch that answers the request, or '!<reason>' once a batcher
  answered it with an error. It is taken when it was answered, or when its batch went past
  'formed' (its batcher confirmed the publish, or a worker started it). A claim held by a batch
  still in 'formed', or whose manifest is gone, is not: that batch's batcher died before its
  publish was confirmed (otherwise the request could not have come back), so the request may be
  batched or answered again, and if the old batch does reach a worker, start-batch skips it.

  The owner's state is in its manifest, {<ns>:<model>}:batch:<owner> (the request's model, so the
  same hash slot as the claim). A script may touch only keys declared in KEYS (Redis Cluster routes
  it by them), so the caller declares the manifests of the owners it knows of, last in KEYS, with
  their batch ids last in ARGV. A claim whose owner was not declared is reported back instead, and
  the caller calls again with that owner's manifest.
]]

-- Owner batch id -> its declared manifest key: KEYS[firstKey..] paired with ARGV[firstArg..].
local function declaredManifests(firstKey, firstArg)
  local manifests = {}
  for j = 0, #KEYS - firstKey do
    manifests[ARGV[firstArg + j]] = KEYS[firstKey + j]
  end
  return manifests
end

-- owner: the claim's value (false or nil: unclaimed). Returns true when the claim is taken,
-- false when the request is free to batch or answer, nil when the owner's manifest was not declared.
local function claimTaken(owner, manifests)
  if not owner then
    return false
  end
  if string.sub(owner, 1, 1) == '!' then
    return true
  end
  local manifest = manifests[owner]
  if not manifest then
    return nil
  end
  local state = redis.call('HGET', manifest, 'state')
  return state ~= false and state ~= 'formed'
end
