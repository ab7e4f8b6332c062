--[[
  finish-batch: a worker published every reply of a batch. Marks it done,
  frees its lane slot, tells the model's batchers that a lane is free, and
  folds the time the batch held its lane into the model's cost of that tier
  (a moving average the batchers plan batches with).

  Every key is the model's ({<ns>:<model>}), so they share one hash slot.

  KEYS[1]   batch manifest hash               {<ns>:<model>}:batch:<batchId>
  KEYS[2]   the model's in-flight batches     {<ns>:<model>}:inflight
  KEYS[3]   the model's tier costs            {<ns>:<model>}:tiercost  (hash tier -> ms)
  KEYS[4..] stored requests the batch answered, deleted  {<ns>:<model>}:body:<requestId>
            (see store-request-body; none for requests that travelled whole)

  ARGV[1]   batchId
  ARGV[2]   now, ms since the epoch
  ARGV[3]   pub/sub channel of the model's lanes   <ns>:lanes:<model> (a channel, not a key)
  ARGV[4]   tier the batch ran at, or '' when no time is reported
  ARGV[5]   ms the run held its lane
  ARGV[6]   TTL of the tier costs, ms

  Publishes '<batchId> <n>' on ARGV[3], n the model's batches still in flight (lapsed entries
  excluded): a batcher that is not forming a batch at that moment takes n as its count, without
  reading it back.

  Returns
     1   done
    -1   no manifest (expired, or Redis lost it); the lane slot is freed all the same
]]
redis.call('ZREM', KEYS[2], ARGV[1])
if #KEYS > 3 then
  redis.call('UNLINK', unpack(KEYS, 4))
end
redis.call('PUBLISH', ARGV[3], ARGV[1] .. ' ' .. redis.call('ZCOUNT', KEYS[2], '(' .. ARGV[2], '+inf'))
if ARGV[4] ~= '' then
  local ms = tonumber(ARGV[5])
  local old = tonumber(redis.call('HGET', KEYS[3], ARGV[4]))
  if old then
    ms = old * 0.8 + ms * 0.2
  end
  redis.call('HSET', KEYS[3], ARGV[4], tostring(ms))
  redis.call('PEXPIRE', KEYS[3], tonumber(ARGV[6]))
end
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
redis.call('HSET', KEYS[1], 'state', 'done', 'updatedAt', ARGV[2])
return 1
