--[[
  reclaim-request: a batcher got a redelivered request (its previous holder
  died, or gave it back after a failed publish). Says what the request's
  claim means for it (see includes/claim-taken), and frees the lane slot of a
  batch that was recorded but never confirmed: that batch's batcher is gone,
  so without this the slot would stay taken until the batch's members' deadlines.

  Every key is the request's model's ({<ns>:<model>}), so they share one hash slot.

  KEYS[1]   the request's claim               {<ns>:<model>}:claim:<requestId>
  KEYS[2]   the model's in-flight batches     {<ns>:<model>}:inflight
  KEYS[3..] manifest of the batch holding the claim, once the caller knows it
                                              {<ns>:<model>}:batch:<owner>

  ARGV[1..] the owners' batch ids, one per manifest in KEYS[3..]

  Returns
    {0}           not claimed: batch it as usual
    {1, owner}    claimed by a batch still in state 'formed' (or whose manifest is gone): its lane
                  slot is freed; batch the request again (create-batch takes it over; a worker
                  that got that batch after all skips it)
    {2, owner}    carried by a batch past 'formed', or answered ('!...'): drop this copy
    {-4, owner}   the claim is held by this batch, whose manifest was not declared; nothing
                  written (the caller calls again with it)
]]
--- @include "includes/claim-taken"

local owner = redis.call('GET', KEYS[1])
if not owner then
  return {0}
end
local taken = claimTaken(owner, declaredManifests(3, 1))
if taken == nil then
  return {-4, owner}
end
if taken then
  return {2, owner}
end
redis.call('ZREM', KEYS[2], owner)
return {1, owner}
