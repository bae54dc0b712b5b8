-- The marker: when the lease table's data began (ms since 1970), and the
-- history it vouches for: the cluster, its timeline, the lease table and
-- its sentinel row (worker -1), which a promotion, a restore, a new table
-- or a TRUNCATE each change. A table of its own, so that dropping
-- flakegen_leases leaves it.
CREATE TABLE IF NOT EXISTS flakegen_marker (
    one        boolean PRIMARY KEY DEFAULT true CHECK (one),
    marker_ms  bigint  NOT NULL,
    stamp      text    NOT NULL
);
