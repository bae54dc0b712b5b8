-- KEYS: mark, free, held. ARGV: record key prefix, workers, preferred id
-- ('' for none), the probe's first id and the id past its last. Returns
-- `{now, marker or '', high-water mark, [worker, holder, version, marker,
-- expires, fence]...}`.
--
-- Bounded: a slice of expired holders moved to `free`, the `free` head,
-- the id at the high-water mark, and the probe's records (at most 64 ids).
local policy = string.match(redis.call('INFO', 'memory'), 'maxmemory_policy:([%w%-]+)')
if policy and string.sub(policy, 1, 8) == 'allkeys-' then
  return redis.error_reply('FLAKEGEN_EVICTS ' .. policy)
end
if not in_force then marker = ''; high = 0 end
local workers = tonumber(ARGV[2])
local function record(id)
  return redis.call('HMGET', ARGV[1] .. id, 'holder', 'version', 'marker', 'expires', 'fence')
end
local records, listed = {}, {}
local function list(id, r)
  if listed[id] or not (r[1] or r[2] or r[3] or r[4] or r[5]) then return end
  listed[id] = true
  table.insert(records, id)
  for i = 1, 5 do table.insert(records, r[i] or '') end
end
if ARGV[3] ~= '' then list(tonumber(ARGV[3]), record(ARGV[3])) end
if marker ~= '' then
  -- Holders whose lease expired are free: a slice per read. An index entry
  -- whose record is gone or of another marker is dropped: a probe finds
  -- its id from then on.
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
      list(n, r)
    end
  end
  for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, 3)) do
    local n = tonumber(id)
    local r = record(n)
    if r[3] == marker then
      list(n, r)
    else
      redis.call('ZREM', KEYS[2], id)
      list(n, r)
    end
  end
end
for n = tonumber(ARGV[4]), tonumber(ARGV[5]) - 1 do
  list(n, record(n))
end
-- The id at the high-water mark, with its record from before the marker.
if high < workers then list(high, record(high)) end
local out = {now, marker, high}
for _, item in ipairs(records) do table.insert(out, item) end
return out
