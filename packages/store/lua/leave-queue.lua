--[[
  leave-queue: take requests out of a level's queue without batching them
  (their publish failed, so they never reached a batcher).

  KEYS[1]      the level's queue   {<ns>:<model>}:queue:<level>

  ARGV[1..n]   request ids

  Returns
    the number of ids that were in the queue
]]
return redis.call('ZREM', KEYS[1], unpack(ARGV))
