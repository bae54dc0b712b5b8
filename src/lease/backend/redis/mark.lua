-- KEYS: mark, free, held. Returns the marker in force, in ms,
-- writing one (and starting an empty index under it) if need be: the
-- server's clock now, rounded up, and later than one it replaces. A
-- namespace with no mark is new or was emptied, and nothing here tells
-- which.
if in_force then return marker end
local ceil_now = tonumber(t[1]) * 1000 + math.ceil(tonumber(t[2]) / 1000)
local began = ceil_now
if mark then
  -- Written by another server process: whatever came after it may be lost.
  began = math.max(ceil_now, tonumber(marker) + 1)
end
local text = string.format('%.0f', began)
redis.call('SET', KEYS[1], run .. ':' .. text .. ':0')
redis.call('UNLINK', KEYS[2], KEYS[3])
return text
