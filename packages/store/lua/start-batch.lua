--[[
  start-batch: a worker is about to run a batch. Locks the claims of the
  members it will answer (a batch in state 'running' is never taken over) and
  tells it which members another batch took over while this one was in state
  'formed' (see create-batch), so no request is answered twice.

  Every key is the model's ({<ns>:<model>}), so they share one hash slot.

  KEYS[1]        batch manifest hash   {<ns>:<model>}:batch:<batchId>
  KEYS[2..1+n]   one claim per member  {<ns>:<model>}:claim:<requestId>

  ARGV[1]        batchId
  ARGV[2]        now, ms since the epoch
  ARGV[3]        TTL for a manifest that has to be written again, ms; a claim written again
                 lives as long as the manifest (which create-batch timed by the deadlines)
  ARGV[4]        delivery limit: starts after which the batch is poison (0 = no limit). Classic
                 queues have no delivery limit of their own, so the count is kept here, in
                 the manifest's 'starts' field, for both durability modes alike.

  Returns
    {0}              the batch was already answered (state 'done', or 'failed': its members
                     were answered with an error): run nothing
    {-1, starts}     the batch was started more than the delivery limit allows (every worker
                     that took it died or gave it back): dead-letter it, run nothing
    {1, i, j, ...}   run members i, j (1-based); the others belong to another batch.
                     A manifest or claim that is gone (expired, or Redis lost it) is
                     written again for this batch, so a later copy is not run twice.
]]
--- @include "includes/batch-members"

local state = redis.call('HGET', KEYS[1], 'state')
if state == 'done' or state == 'failed' then
  return {0}
end
local ttl = batchTtl(KEYS[1], ARGV[3])
local limit = tonumber(ARGV[4])
local starts = redis.call('HINCRBY', KEYS[1], 'starts', 1)
if limit > 0 and starts > limit then
  return {-1, starts}
end
local run = {1}
for _, i in ipairs(claimMembers(2, #KEYS, ARGV[1], ttl)) do
  run[#run + 1] = i
end
redis.call('HSET', KEYS[1], 'state', 'running', 'updatedAt', ARGV[2])
if not state then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return run
