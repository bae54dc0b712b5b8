-- The namespace's index (KEYS[2], KEYS[3]: free ids by fence, held ids by
-- expiry): `index(id, holder, expires, fence)` files a record written under
-- the marker in force. Members are zero-padded ids, so ties in a sorted set
-- order as numbers.
local function member(id) return string.format('%020d', id) end
local function index(id, holder, expires, fence)
  if holder == '' then
    redis.call('ZREM', KEYS[3], member(id))
    redis.call('ZADD', KEYS[2], fence, member(id))
  else
    redis.call('ZREM', KEYS[2], member(id))
    redis.call('ZADD', KEYS[3], expires, member(id))
  end
end
