CREATE TABLE IF NOT EXISTS flakegen_leases (
    -- The namespace.
    namespace  VARCHAR(200) NOT NULL,
    -- The worker id; -1 is the table's sentinel row (namespace '').
    worker     BIGINT NOT NULL,
    -- The holder's token; NULL when nobody holds it.
    holder     VARCHAR(255) NULL,
    -- Changes with every write: a write names the version it replaces.
    version    BIGINT NOT NULL DEFAULT 0,
    -- The namespace's marker in force when the row was written.
    marker_ms  BIGINT NOT NULL DEFAULT 0,
    -- When the lease expires, by the server's clock (ms since 1970).
    expires_ms BIGINT NOT NULL DEFAULT 0,
    -- The fence (ms since 1970): the holders' IDs are all earlier.
    fence_ms   BIGINT NOT NULL,
    -- Nobody holds it: what an acquisition looks for first.
    is_free    TINYINT GENERATED ALWAYS AS (holder IS NULL) STORED,
    PRIMARY KEY (namespace, worker),
    -- What an acquisition chooses from, found without reading every record:
    -- a namespace's free records by fence, and its held ones by expiry.
    KEY flakegen_leases_free (namespace, marker_ms, is_free, fence_ms, worker),
    KEY flakegen_leases_held (namespace, marker_ms, is_free, expires_ms)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
