-- The server's clock (`now`, ms rounded down; `t` as TIME gave it) and
-- process (`run`), and the namespace's mark in KEYS[1]: `<run>:<marker
-- ms>:<high-water mark>`, in force only under the process that wrote it.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local run = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
local mark = redis.call('GET', KEYS[1])
local mark_run, marker, high
if mark then
  mark_run, marker, high = string.match(mark, '^(%x+):(%d+):(%d+)$')
  if not mark_run then return redis.error_reply('FLAKEGEN_CORRUPT marker ' .. KEYS[1]) end
  high = tonumber(high)
end
local in_force = mark_run == run
