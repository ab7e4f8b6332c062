--[[
  cache-get: look up a cached response and mark it used (least-recently-used
  order). An entry past its expiry is removed and reported as a miss.

  Every key is the namespace cache's ({<ns>:cache}), so they share one hash slot.

  KEYS[1]   entries        {<ns>:cache}:entries   (hash key -> response bytes)
  KEYS[2]   entry meta     {<ns>:cache}:meta      (hash key -> '<expiresAt ms>:<bytes>')
  KEYS[3]   use order      {<ns>:cache}:lru       (zset key -> last use, ms)
  KEYS[4]   bytes held     {<ns>:cache}:bytes     (integer)

  ARGV[1]   key (hash of model, version, inputs and requested outputs)
  ARGV[2]   now, ms since the epoch

  Returns
    the response bytes   a hit
    false                a miss (absent or expired)
]]
local meta = redis.call('HGET', KEYS[2], ARGV[1])
if not meta then
  return false
end
local sep = string.find(meta, ':', 1, true)
local expiresAt = tonumber(string.sub(meta, 1, sep - 1))
if expiresAt <= tonumber(ARGV[2]) then
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('HDEL', KEYS[2], ARGV[1])
  redis.call('ZREM', KEYS[3], ARGV[1])
  redis.call('DECRBY', KEYS[4], tonumber(string.sub(meta, sep + 1)))
  return false
end
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1])
return redis.call('HGET', KEYS[1], ARGV[1])
