--[[
  set-model-control: the repository API asks the mesh to load or unload a
  model. Records the wanted state with a new generation and tells the workers
  (pub/sub); workers also re-read the hash on every heartbeat, so a missed
  message delays a change by one heartbeat at most. A worker reports the
  generation it acted on, so the caller can wait for exactly this request.

  KEYS[1]   model control   {<ns>}:control   (hash model -> '<load|unload>:<generation>')

  ARGV[1]   model
  ARGV[2]   'load' or 'unload'
  ARGV[3]   TTL of the hash, ms (refreshed on every write)
  ARGV[4]   registry pub/sub channel   <ns>:registry (a channel, not a key)

  Returns
    the new generation (>= 1), or -1 when ARGV[2] is neither 'load' nor 'unload' (nothing written)
]]
if ARGV[2] ~= 'load' and ARGV[2] ~= 'unload' then
  return -1
end
local gen = 0
local current = redis.call('HGET', KEYS[1], ARGV[1])
if current then
  gen = tonumber(string.match(current, ':(%d+)$')) or 0
end
gen = gen + 1
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ':' .. gen)
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]))
redis.call('PUBLISH', ARGV[4], 'control:' .. ARGV[1])
return gen
