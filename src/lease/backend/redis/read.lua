-- KEYS: mark, free, held, cursor. ARGV: record key prefix, workers,
-- preferred id ('' for none), slice. Returns `{now, marker or '',
-- high-water mark, more (0 or 1), n, <n unrecorded ids>, [worker, holder,
-- version, marker, expires, fence]...}`.
--
-- Bounded: a slice of expired holders moved to `free`, the `free` head,
-- the id at the high-water mark, and a slice of ids below the mark from
-- the cursor, for records gone.
local policy = string.match(redis.call('INFO', 'memory'), 'maxmemory_policy:([%w%-]+)')
if policy and string.sub(policy, 1, 8) == 'allkeys-' then
  return redis.error_reply('FLAKEGEN_EVICTS ' .. policy)
end
if not in_force then marker = ''; high = 0 end
local workers = tonumber(ARGV[2])
local function record(id)
  return redis.call('HMGET', ARGV[1] .. id, 'holder', 'version', 'marker', 'expires', 'fence')
end
local records, unrecorded, listed, gone = {}, {}, {}, {}
local function list(id, r)
  if listed[id] or not (r[1] or r[2] or r[3] or r[4] or r[5]) then return end
  listed[id] = true
  table.insert(records, id)
  for i = 1, 5 do table.insert(records, r[i] or '') end
end
-- An id below the mark whose record under the marker is gone.
local function forgotten(id, r)
  if id < high and id < workers and not gone[id] then
    gone[id] = true
    table.insert(unrecorded, id)
  end
  list(id, r)
end
if ARGV[3] ~= '' then list(tonumber(ARGV[3]), record(ARGV[3])) end
local more = 0
if marker ~= '' then
  -- Holders whose lease expired are free: a slice per read. An index entry
  -- whose record is gone is said once and dropped: the slices below the
  -- mark find its id from then on.
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, 16)) do
    local n = tonumber(id)
    local r = record(n)
    if r[3] == marker then
      if r[1] == '' or tonumber(r[4]) <= now then
        index(n, '', 0, tonumber(r[5]))
      else
        index(n, r[1], tonumber(r[4]), tonumber(r[5]))
      end
    else
      redis.call('ZREM', KEYS[3], id)
      forgotten(n, r)
    end
  end
  for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, 3)) do
    local n = tonumber(id)
    local r = record(n)
    if r[3] == marker then
      list(n, r)
    else
      redis.call('ZREM', KEYS[2], id)
      forgotten(n, r)
    end
  end
  -- A slice below the mark, from the cursor: ids whose records are gone.
  local top = math.min(high, workers)
  local from = tonumber(redis.call('GET', KEYS[4]) or '0') or 0
  if from >= top then from = 0 end
  local stop = math.min(from + tonumber(ARGV[4]), top)
  local first
  for n = from, stop - 1 do
    if redis.call('HGET', ARGV[1] .. n, 'marker') ~= marker then
      forgotten(n, record(n))
      first = first or n
    end
  end
  local cursor = first or stop
  if cursor >= top then cursor = 0 end
  if cursor ~= from then redis.call('SET', KEYS[4], cursor) end
  if from > 0 or stop < top then more = 1 end
end
-- The id at the high-water mark, with its record from before the marker.
if high < workers then list(high, record(high)) end
local out = {now, marker, high, more, #unrecorded}
for _, id in ipairs(unrecorded) do table.insert(out, id) end
for _, item in ipairs(records) do table.insert(out, item) end
return out
