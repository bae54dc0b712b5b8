CREATE TABLE IF NOT EXISTS flakegen_leases (
    namespace  text   NOT NULL,
    -- The worker id; -1 is the table's sentinel row (namespace '').
    worker     bigint NOT NULL,
    -- The holder's token; NULL when nobody holds it.
    holder     text,
    -- Changes with every write: a write names the version it replaces.
    version    bigint NOT NULL DEFAULT 0,
    -- The namespace's marker in force when the row was written.
    marker_ms  bigint NOT NULL DEFAULT 0,
    -- When the lease expires, by the server's clock (ms since 1970).
    expires_ms bigint NOT NULL DEFAULT 0,
    -- The fence (ms since 1970): the holders' IDs are all earlier.
    fence_ms   bigint NOT NULL,
    PRIMARY KEY (namespace, worker)
);
-- What an acquisition chooses from, found without reading every record:
-- a namespace's free records by fence, and its held ones by expiry.
CREATE INDEX IF NOT EXISTS flakegen_leases_free
    ON flakegen_leases (namespace, marker_ms, fence_ms, worker) WHERE holder IS NULL;
CREATE INDEX IF NOT EXISTS flakegen_leases_held
    ON flakegen_leases (namespace, marker_ms, expires_ms) WHERE holder IS NOT NULL;
