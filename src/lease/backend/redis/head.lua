-- KEYS: mark. Returns `{now, marker or '', high-water mark}`, writing nothing.
if in_force then return {now, marker, high} end
return {now, '', 0}
