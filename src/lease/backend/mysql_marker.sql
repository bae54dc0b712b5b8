-- The marker: when the lease table's data began (ms since 1970), and the
-- history it vouches for: the server that confirmed its writes, the lease
-- table's creation and its sentinel row (worker -1), which a failover, a
-- restore, a new table or a TRUNCATE each change. A table of its own, so
-- that dropping flakegen_leases leaves it.
CREATE TABLE IF NOT EXISTS flakegen_marker (
    one        TINYINT NOT NULL PRIMARY KEY,
    marker_ms  BIGINT NOT NULL,
    stamp      VARCHAR(255) NOT NULL
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
