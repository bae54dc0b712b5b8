-- Each namespace's marker: the moment from which the registry vouches for
-- its records (ms since 1970), the history it vouches for (the server that
-- confirms writes, the lease table's creation and its sentinel row, which
-- a failover, a restore, a new table or a TRUNCATE each change), and its
-- high-water mark: no id at or above it has had a record written under the
-- marker. A table of its own, so that dropping flakegen_leases leaves it.
CREATE TABLE IF NOT EXISTS flakegen_namespaces (
    namespace  VARCHAR(200) NOT NULL PRIMARY KEY,
    marker_ms  BIGINT NOT NULL,
    stamp      VARCHAR(255) NOT NULL,
    high_water BIGINT NOT NULL DEFAULT 0
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
