--[[
  expire-request: a batcher is about to answer a queued request with an error
  (its queue timeout or its deadline passed). Marks the request answered so a
  redelivered copy is dropped instead of answered again, and takes it out of
  its admission queue. A claim held by a batch still in state 'formed' is
  taken over, as in create-batch (see includes/claim-taken).

  Every key is the request's model's ({<ns>:<model>}), so they share one hash slot.

  KEYS[1]         the request's claim                 {<ns>:<model>}:claim:<requestId>
  KEYS[2..1+q]    its admission queue, when it has one (q = 0 or 1)
                                                      {<ns>:<model>}:queue:<level>
  KEYS[2+q..]     manifest of the batch holding the claim, once the caller knows it
                                                      {<ns>:<model>}:batch:<owner>

  ARGV[1]         request id
  ARGV[2]         marker, '!' followed by the reason (e.g. '!timeout')
  ARGV[3]         TTL of the marker, ms
  ARGV[4]         q, the number of admission queues (0 or 1)
  ARGV[5..]       the owners' batch ids, one per manifest in KEYS[2+q..]

  Returns
    {1}           marked: the caller answers it
    {0, owner}    a batch past 'formed' carries it, or it was answered already: drop it unanswered
    {-4, owner}   the claim is held by this batch, whose manifest was not declared; nothing
                  written (the caller calls again with it)
]]
--- @include "includes/claim-taken"

local q = tonumber(ARGV[4])
local owner = redis.call('GET', KEYS[1])
local taken = claimTaken(owner, declaredManifests(2 + q, 5))
if taken == nil then
  return {-4, owner}
end
if taken then
  return {0, owner}
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', tonumber(ARGV[3]))
if q > 0 then
  redis.call('ZREM', KEYS[2], ARGV[1])
end
return {1}
