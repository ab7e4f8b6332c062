--[[
  reclaim-request: a batcher got a redelivered request (its previous holder
  died, or gave it back after a failed publish). Says what the request's
  claim means for it, and frees the lane slot of a batch that was recorded
  but never confirmed: that batch's batcher is gone, so without this the
  slot would stay taken until the batch's members' deadlines.

  KEYS[1]   the request's claim               <ns>:claim:<requestId>
  KEYS[2]   the model's in-flight batches     <ns>:inflight:<model>

  ARGV[1]   manifest key prefix <ns>:batch:

  Returns
    {0}          not claimed: batch it as usual
    {1, owner}   claimed by a batch still in state 'formed': its lane slot is freed; batch the
                 request again (create-batch takes it over; a worker that got that batch after
                 all skips it)
    {2, owner}   carried by a batch past 'formed', or answered ('!...'): drop this copy
]]
local owner = redis.call('GET', KEYS[1])
if not owner then
  return {0}
end
if string.sub(owner, 1, 1) == '!' then
  return {2, owner}
end
local state = redis.call('HGET', ARGV[1] .. owner, 'state')
if state and state ~= 'formed' then
  return {2, owner}
end
redis.call('ZREM', KEYS[2], owner)
return {1, owner}
