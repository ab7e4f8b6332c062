--[[
  store-request-body: a gateway keeps a large request beside its message (the
  message carries only the envelope; see InferRequestMessage.stored). The
  worker that runs the request's batch reads it, and finish-batch deletes it
  once answered; the TTL (the request's deadline plus slack) clears what no
  batch ever answered.

  KEYS[1]   the request, as encoded     {<ns>:<model>}:body:<requestId>

  ARGV[1]   the encoded request (bytes)
  ARGV[2]   TTL, ms

  Returns
    1   stored
]]
redis.call('SET', KEYS[1], ARGV[1], 'PX', tonumber(ARGV[2]))
return 1
