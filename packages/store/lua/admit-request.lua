--[[
  admit-request: let a request into its model's queue at one priority level,
  or refuse it because the level already holds max_queue_size requests.
  Several gateways share the count, so the limit is exact mesh-wide.

  An entry's score is the request's deadline: a request whose gateway or
  batcher died without taking it out of the queue stops counting at its
  deadline, so a crash never leaks a queue slot for long.

  KEYS[1]   the level's queue   {<ns>:<model>}:queue:<level>   (zset requestId -> deadline, ms)

  ARGV[1]   request id
  ARGV[2]   its deadline, ms since the epoch
  ARGV[3]   now, ms since the epoch
  ARGV[4]   max_queue_size (> 0)

  Returns
    {1, n}   admitted; the level now holds n requests (an id already in the queue is admitted again, unchanged)
    {0, n}   refused: the level holds n >= max_queue_size requests; nothing written
]]
local now = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return {1, redis.call('ZCARD', KEYS[1])}
end
local n = redis.call('ZCARD', KEYS[1])
if n >= tonumber(ARGV[4]) then
  return {0, n}
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
local ttl = tonumber(ARGV[2]) - now
if ttl > redis.call('PTTL', KEYS[1]) then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return {1, n + 1}
