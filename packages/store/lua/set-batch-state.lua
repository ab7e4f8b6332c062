--[[
  set-batch-state: move a batch manifest to its next state.

  KEYS[1]   batch manifest hash   {<ns>:<model>}:batch:<batchId>

  ARGV[1]   expected current state (formed | published | running)
  ARGV[2]   new state              (published | running | done | failed)
  ARGV[3]   now, ms since the epoch

  Returns
    {1}           changed
    {-1}          no such manifest (expired or never written)
    {-2, state}   the manifest is in another state, `state`; nothing written
]]
local state = redis.call('HGET', KEYS[1], 'state')
if not state then
  return {-1}
end
if state ~= ARGV[1] then
  return {-2, state}
end
redis.call('HSET', KEYS[1], 'state', ARGV[2], 'updatedAt', ARGV[3])
return {1}
