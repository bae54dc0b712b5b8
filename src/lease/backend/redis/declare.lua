-- KEYS: mark, free, held, cursor. Writes the marker 0 where the namespace
-- has none of these keys (its records are looked for apart, by SCAN).
-- Returns '' or the trace found.
for i, name in ipairs({'a marker', 'an index of free ids', 'an index of held ids', 'a cursor'}) do
  if redis.call('EXISTS', KEYS[i]) == 1 then return 'it has ' .. name .. ' (' .. KEYS[i] .. ')' end
end
redis.call('SET', KEYS[1], run .. ':0:0')
return ''
