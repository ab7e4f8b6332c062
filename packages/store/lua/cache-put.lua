--[[
  cache-put: store a response, then evict the least recently used entries
  (expired ones first, as they come in that order or later) until the cache
  holds at most its size limit. A response larger than the whole limit is not
  stored.

  Every key is the namespace cache's ({<ns>:cache}), so they share one hash slot.

  KEYS[1]   entries        {<ns>:cache}:entries   (hash key -> response bytes)
  KEYS[2]   entry meta     {<ns>:cache}:meta      (hash key -> '<expiresAt ms>:<bytes>')
  KEYS[3]   use order      {<ns>:cache}:lru       (zset key -> last use, ms)
  KEYS[4]   bytes held     {<ns>:cache}:bytes     (integer)

  ARGV[1]   key (hash of model, version, inputs and requested outputs)
  ARGV[2]   response bytes
  ARGV[3]   now, ms since the epoch
  ARGV[4]   time to live, ms
  ARGV[5]   size limit of the whole cache, bytes

  Returns
    {1, evicted}   stored; `evicted` entries were removed to make room
    {0, 0}         larger than the size limit; nothing written
]]
local size = string.len(ARGV[2])
local limit = tonumber(ARGV[5])
if size > limit then
  return {0, 0}
end
local function forget(key)
  local meta = redis.call('HGET', KEYS[2], key)
  if meta then
    redis.call('DECRBY', KEYS[4], tonumber(string.sub(meta, string.find(meta, ':', 1, true) + 1)))
  end
  redis.call('HDEL', KEYS[1], key)
  redis.call('HDEL', KEYS[2], key)
  redis.call('ZREM', KEYS[3], key)
end
forget(ARGV[1])
local now = tonumber(ARGV[3])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[1], (now + tonumber(ARGV[4])) .. ':' .. size)
redis.call('ZADD', KEYS[3], now, ARGV[1])
local held = redis.call('INCRBY', KEYS[4], size)
local evicted = 0
while held > limit do
  local oldest = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
  if not oldest or oldest == ARGV[1] then
    break
  end
  forget(oldest)
  evicted = evicted + 1
  held = tonumber(redis.call('GET', KEYS[4]))
end
return {1, evicted}
