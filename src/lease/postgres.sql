CREATE TABLE IF NOT EXISTS flakegen_leases (
    namespace  text   NOT NULL,
    -- The worker id; -1 is the namespace's marker row.
    worker     bigint NOT NULL,
    -- The holder's token; NULL when nobody holds it.
    holder     text,
    -- When the lease expires, by the server's clock (ms since 1970).
    expires_ms bigint NOT NULL DEFAULT 0,
    -- The fence (ms since 1970): the holder's IDs are all earlier. In the
    -- marker row: when the namespace was first used, or used after a loss.
    fence_ms   bigint NOT NULL,
    PRIMARY KEY (namespace, worker)
);
