--[[
  finish-batch: a worker published every reply of a batch. Marks it done,
  frees its lane slot and tells the model's batchers that a lane is free.

  KEYS[1]   batch manifest hash               <ns>:batch:<batchId>
  KEYS[2]   the model's in-flight batches     <ns>:inflight:<model>

  ARGV[1]   batchId
  ARGV[2]   now, ms since the epoch
  ARGV[3]   pub/sub channel of the model's lanes   <ns>:lanes:<model>

  Returns
     1   done
    -1   no manifest (expired, or Redis lost it); the lane slot is freed all the same
]]
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('PUBLISH', ARGV[3], ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
redis.call('HSET', KEYS[1], 'state', 'done', 'updatedAt', ARGV[2])
return 1
