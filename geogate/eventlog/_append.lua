-- Idempotent append + projection update in one atomic step (docs/event-log.md).
-- KEYS[1] stream, KEYS[2] dedupe key (a string, or a hash of a call's dedupe keys), KEYS[3] aggregate index,
-- KEYS[4..] keys the ops touch.
-- ARGV: mode ("append" | "project"), dedupe ttl (0 = none), entry id (used in "project" mode),
--       dedupe field ("" = KEYS[2] is the dedupe key itself; else the field of the hash KEYS[2]),
--       nfields, field/value pairs,
--       nexpect, then per expectation: key#, field, kind ("in"|"not_in"|"lt"), nvalues, values...,
--       nops, then per op: name, key#, nargs, args...   ("\0id" in an arg is replaced by the entry id),
--       then 0, or 1 and a condition laid out as an expectation (the op runs only if it holds after the ops before),
--       readback key# (0 = none), readback field.
-- Returns {status, entry id, readback, failed}: 1 appended, 0 duplicate (id of the first), -1 an expectation failed
-- (then the entry id slot holds that field's current value and `failed` the expectation's 1-based number), -2 the
-- log is fenced by a replay's swap (nothing written; try again shortly).
local mode, ttl, dedupe_field = ARGV[1], tonumber(ARGV[2]), ARGV[4]
local i = 5

local nfields = tonumber(ARGV[i]); i = i + 1
local fields = {}
for j = 1, nfields * 2 do fields[j] = ARGV[i]; i = i + 1 end

local function expectation()
  local e = {key = KEYS[tonumber(ARGV[i])], field = ARGV[i + 1], kind = ARGV[i + 2], values = {}, list = {}}
  local n = tonumber(ARGV[i + 3])
  for j = 1, n do e.values[ARGV[i + 3 + j]] = true; e.list[j] = ARGV[i + 3 + j] end
  i = i + 4 + n
  return e
end

local expects = {}
local nexpect = tonumber(ARGV[i]); i = i + 1
for x = 1, nexpect do expects[x] = expectation() end

local ops = {}
local nops = tonumber(ARGV[i]); i = i + 1
for o = 1, nops do
  local nargs = tonumber(ARGV[i + 2])
  local args = {}
  for j = 1, nargs do args[j] = ARGV[i + 2 + j] end
  ops[o] = {name = ARGV[i], key = KEYS[tonumber(ARGV[i + 1])], args = args}
  i = i + 3 + nargs
  local conditional = tonumber(ARGV[i]); i = i + 1
  if conditional == 1 then ops[o].when = expectation() end
end
local readback_key, readback_field = tonumber(ARGV[i]), ARGV[i + 1]

local function readback()
  if readback_key == 0 then return false end
  return redis.call('HGET', KEYS[readback_key], readback_field)
end

local function holds(e)
  local cur = redis.call('HGET', e.key, e.field) or ''
  if e.kind == 'lt' then return (tonumber(cur) or 0) < tonumber(e.list[1]), cur end
  if e.kind == 'same' then return cur ~= '' and cur == (redis.call('HGET', e.key, e.list[1]) or ''), cur end
  local found = e.values[cur] == true
  if e.kind == 'not_in' then return not found, cur end
  return found, cur
end

local function hsetif(key, args)
  -- HSETIF guard_field nforbidden forbidden... field value ...: skipped when the guard holds a forbidden value
  local cur = redis.call('HGET', key, args[1]) or ''
  local nf = tonumber(args[2])
  for j = 3, 2 + nf do if args[j] == cur then return end end
  if #args > 2 + nf then redis.call('HSET', key, unpack(args, 3 + nf)) end
end

local function apply_ops(id)
  for _, op in ipairs(ops) do
    for j, a in ipairs(op.args) do if a == '\0id' then op.args[j] = id end end
    if op.when == nil or holds(op.when) then
      if op.name == 'HSETIF' then hsetif(op.key, op.args) else redis.call(op.name, op.key, unpack(op.args)) end
    end
  end
end

local id
if mode == 'append' then
  local first
  if dedupe_field == '' then first = redis.call('GET', KEYS[2])
  else
    -- a call's dedupe keys were string keys `<KEYS[2]>:<field>` before they became fields of KEYS[2]: honour those
    -- too until they expire (the dedupe TTL), so an append retried across an upgrade still lands once
    first = redis.call('HGET', KEYS[2], dedupe_field) or redis.call('GET', KEYS[2] .. ':' .. dedupe_field)
  end
  if first then return {0, first, readback(), 0} end
  -- a replay swapping its rebuilt projections in holds `<prefix>:fence`: appends wait (the caller retries)
  local prefix = string.match(KEYS[1], '^(.*):log:')
  if prefix and redis.call('EXISTS', prefix .. ':fence') == 1 then return {-2, '', false, 0} end
  for x, e in ipairs(expects) do
    local ok, cur = holds(e)
    if not ok then return {-1, cur, readback(), x} end
  end
  id = redis.call('XADD', KEYS[1], '*', unpack(fields))
  if dedupe_field ~= '' then
    redis.call('HSET', KEYS[2], dedupe_field, id)
    if ttl > 0 then redis.call('EXPIRE', KEYS[2], ttl) end
  elseif ttl > 0 then redis.call('SET', KEYS[2], id, 'EX', ttl) else redis.call('SET', KEYS[2], id) end
else
  id = ARGV[3]
end
redis.call('RPUSH', KEYS[3], id)
apply_ops(id)
return {1, id, readback(), 0}
