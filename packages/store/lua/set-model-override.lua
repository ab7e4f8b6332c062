--[[
  set-model-override: the load API pushed a model's config (and files), or a
  plain load returns the model to its repository folder. Replaces the whole
  override at once, so a service reading it never sees a config with another
  push's files. Every service loading the model reads it (any host: it is in
  Redis, not on one machine's disk).

  KEYS[1]   the model's override   {<ns>}:override:<model>   (hash: id, config, file:<version>/<name> -> bytes)

  ARGV[1]   the override's id (a hash of its contents); '' removes the override
  ARGV[2]   the config, protobuf text (ignored when removing)
  ARGV[3..] pairs: 'file:<version>/<name>', contents

  Returns
    the number of files stored (0 for a config alone, or when removed)
]]
redis.call('DEL', KEYS[1])
if ARGV[1] == '' then
  return 0
end
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'config', ARGV[2])
local files = 0
for i = 3, #ARGV, 2 do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  files = files + 1
end
return files
