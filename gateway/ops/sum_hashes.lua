-- Read-only: the field-by-field sum of the integer hashes KEYS (the ops summary's slots of one window), flattened.
-- Summing in Redis returns one small hash instead of every slot's fields.
local acc, order = {}, {}
for _, key in ipairs(KEYS) do
  local flat = redis.call('HGETALL', key)
  for i = 1, #flat, 2 do
    local f = flat[i]
    if acc[f] == nil then acc[f] = 0; order[#order + 1] = f end
    acc[f] = acc[f] + tonumber(flat[i + 1])
  end
end
local out = {}
for _, f in ipairs(order) do
  out[#out + 1] = f
  out[#out + 1] = string.format('%d', acc[f])
end
return out
