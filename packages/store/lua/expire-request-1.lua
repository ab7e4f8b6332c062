--[[
  expire-request: a batcher is about to answer a queued request with an error
  (its queue timeout or its deadline passed). Marks the request answered so a
  redelivered copy is dropped instead of answered again, and takes it out of
  its admission queue. A claim held by a batch still in state 'formed' is
  taken over, as in create-batch.

  KEYS[1]   the request's claim          <ns>:claim:<requestId>
  KEYS[2]   optional: its admission queue <ns>:queue:<model>:<level>

  ARGV[1]   request id
  ARGV[2]   marker, '!' followed by the reason (e.g. '!timeout')
  ARGV[3]   TTL of the marker, ms
  ARGV[4]   manifest key prefix <ns>:batch:

  Returns
    {1}          marked: the caller answers it
    {0, owner}   a batch past 'formed' carries it, or it was answered already: drop it unanswered
]]
local owner = redis.call('GET', KEYS[1])
if owner then
  if string.sub(owner, 1, 1) == '!' then
    return {0, owner}
  end
  local state = redis.call('HGET', ARGV[4] .. owner, 'state')
  if state and state ~= 'formed' then
    return {0, owner}
  end
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', tonumber(ARGV[3]))
if KEYS[2] then
  redis.call('ZREM', KEYS[2], ARGV[1])
end
return {1}
