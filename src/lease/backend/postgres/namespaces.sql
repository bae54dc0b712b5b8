-- Each namespace's marker: the moment from which the registry vouches for
-- its records (ms since 1970), the history it vouches for (the cluster,
-- its timeline, the lease table and its sentinel row, which a promotion, a
-- restore, a new table or a TRUNCATE each change), and its high-water
-- mark: no id at or above it has had a record written under the marker. A
-- table of its own, so that dropping flakegen_leases leaves it.
CREATE TABLE IF NOT EXISTS flakegen_namespaces (
    namespace  text   PRIMARY KEY,
    marker_ms  bigint NOT NULL,
    stamp      text   NOT NULL,
    high_water bigint NOT NULL DEFAULT 0
);
