--[[
  fail-batch: a batch will not run, and its members are to be answered with an error: it was
  dead-lettered (it crashed every worker that ran it, up to the delivery limit), or its model
  was unloaded while it waited in the batch queue. Claims the members it still answers (as
  start-batch), marks it failed, so neither a redelivered copy nor a worker that gets it later
  answers them again, deletes the stored requests of those members (as finish-batch), frees its
  lane slot and tells the model's batchers that a lane is free.

  Every key is the model's ({<ns>:<model>}), so they share one hash slot.

  KEYS[1]        batch manifest hash             {<ns>:<model>}:batch:<batchId>
  KEYS[2]        the model's in-flight batches   {<ns>:<model>}:inflight
  KEYS[3..2+n]   one claim per member            {<ns>:<model>}:claim:<requestId>
  KEYS[3+n..2+2n] the members' stored requests, in the same order  {<ns>:<model>}:body:<requestId>
                 (see store-request-body; a member that travelled whole has none, and its key
                 is given all the same)

  ARGV[1]   batchId
  ARGV[2]   now, ms since the epoch
  ARGV[3]   pub/sub channel of the model's lanes   <ns>:lanes:<model> (a channel, not a key)
  ARGV[4]   TTL for a manifest that has to be written again, ms (as start-batch)

  Publishes '<batchId> <n>' on ARGV[3], n the model's batches still in flight (as finish-batch).

  Returns
    {0}              already done or failed: answer nothing (the lane slot is freed all the same)
    {1, i, j, ...}   answer members i, j (1-based) with the error; the others belong to another
                     batch. A manifest that is gone (expired, or Redis lost it) is written again.
]]
--- @include "includes/batch-members"

redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('PUBLISH', ARGV[3], ARGV[1] .. ' ' .. redis.call('ZCOUNT', KEYS[2], '(' .. ARGV[2], '+inf'))
local state = redis.call('HGET', KEYS[1], 'state')
if state == 'done' or state == 'failed' then
  return {0}
end
local n = (#KEYS - 2) / 2
local ttl = batchTtl(KEYS[1], ARGV[4])
local answer = {1}
for _, i in ipairs(claimMembers(3, 2 + n, ARGV[1], ttl)) do
  answer[#answer + 1] = i
  redis.call('UNLINK', KEYS[2 + n + i])
end
redis.call('HSET', KEYS[1], 'state', 'failed', 'updatedAt', ARGV[2])
if not state then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return answer
