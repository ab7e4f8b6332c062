--[[
  fail-batch: a batch was dead-lettered (it crashed every worker that ran it,
  up to the delivery limit) and every member was answered with an error.
  Marks it failed, so a redelivered dead letter is not answered again, frees
  its lane slot and tells the model's batchers that a lane is free.

  Every key is the model's ({<ns>:<model>}), so they share one hash slot.

  KEYS[1]   batch manifest hash             {<ns>:<model>}:batch:<batchId>
  KEYS[2]   the model's in-flight batches   {<ns>:<model>}:inflight

  ARGV[1]   batchId
  ARGV[2]   now, ms since the epoch
  ARGV[3]   pub/sub channel of the model's lanes   <ns>:lanes:<model> (a channel, not a key)

  Publishes '<batchId> <n>' on ARGV[3], n the model's batches still in flight (as finish-batch).

  Returns
     1   marked failed
     0   already done or failed: nothing changed but the lane slot
    -1   no manifest (expired, or Redis lost it); the lane slot is freed all the same
]]
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('PUBLISH', ARGV[3], ARGV[1] .. ' ' .. redis.call('ZCOUNT', KEYS[2], '(' .. ARGV[2], '+inf'))
local state = redis.call('HGET', KEYS[1], 'state')
if not state then
  return -1
end
if state == 'done' or state == 'failed' then
  return 0
end
redis.call('HSET', KEYS[1], 'state', 'failed', 'updatedAt', ARGV[2])
return 1
