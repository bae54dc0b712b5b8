-- KEYS: mark, free, held, record. ARGV: expected marker ms, expected
-- version ('' for no record), holder, version, ttl ms, fence ms, worker id.
-- Returns `now`, or nil. A worker at or above the high-water mark raises
-- it past the worker in the same step.
if not in_force or marker ~= ARGV[1] then return false end
if ARGV[2] == '' then
  if redis.call('EXISTS', KEYS[4]) == 1 then return false end
elseif redis.call('HGET', KEYS[4], 'version') ~= ARGV[2] then
  return false
end
local ttl = tonumber(ARGV[5])
local expires = 0
if ttl > 0 then expires = now + ttl end
redis.call('HSET', KEYS[4], 'holder', ARGV[3], 'version', ARGV[4], 'marker', ARGV[1],
  'expires', string.format('%.0f', expires), 'fence', ARGV[6])
local worker = tonumber(ARGV[7])
index(worker, ARGV[3], expires, tonumber(ARGV[6]))
if worker >= high then
  redis.call('SET', KEYS[1], run .. ':' .. marker .. ':' .. string.format('%.0f', worker + 1))
end
return now
