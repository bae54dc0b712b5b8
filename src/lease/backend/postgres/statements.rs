//! The statements of the storage steps, each with what it binds.

use std::sync::LazyLock;

/// The server's clock in ms, rounded down: expiry is judged no later than it is.
pub(super) const NOW_MS: &str = "floor(extract(epoch from clock_timestamp()) * 1000)::bigint";

/// The server's clock in ms, rounded up: a marker is never earlier than the loss.
pub(super) const CEIL_NOW_MS: &str = "ceil(extract(epoch from clock_timestamp()) * 1000)::bigint";

/// What a marker vouches for, as the server names its history now: the
/// cluster's system identifier, its timeline (from the name of the WAL file
/// it writes to; `standby` while in recovery), the lease table (its oid,
/// which a new table changes) and the token of the table's sentinel row
/// (`worker` -1), which `TRUNCATE` or a `DELETE` of every row takes away.
/// Refers to the lease table: only in statements that know it exists.
macro_rules! stamp {
    () => {
        "((SELECT system_identifier FROM pg_control_system())::text || '/' || \
          CASE WHEN pg_is_in_recovery() THEN 'standby' \
               ELSE substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) END || '/' || \
          coalesce(to_regclass('flakegen_leases')::oid::text, 'none') || '/' || \
          coalesce((SELECT holder FROM flakegen_leases WHERE namespace = '' AND worker = -1), 'none'))"
    };
}
pub(super) const STAMP: &str = stamp!();

/// Writes the table's sentinel row where it is missing, with a token no
/// other table had: a table's data begins with it.
pub(super) const SENTINEL: &str = "INSERT INTO flakegen_leases (namespace, worker, holder, fence_ms) \
     VALUES ('', -1, md5(random()::text || clock_timestamp()::text), 0) ON CONFLICT DO NOTHING";

/// The namespace `$1`'s marker in force and its high-water mark, if any.
pub(super) static MARK_IN_FORCE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT marker_ms, high_water FROM flakegen_namespaces \
         WHERE namespace = $1 AND stamp = {STAMP}"
    )
});

/// A read, in one statement and one snapshot: the server's clock, the
/// namespace `$1`'s marker in force and high-water mark (NULL and 0 where
/// none is), beside each record an acquisition chooses from (NULL where
/// there is none): the free one with the earliest fence and a few expired
/// ones under the marker (through the partial indexes), and those of the
/// preferred id, the id at the high-water mark and the ids probed. `$2`
/// workers, `$3` the preferred id, `$4` and `$5` the probe's first id and
/// the id past its last.
pub(super) static READ: LazyLock<String> = LazyLock::new(|| {
    let columns =
        "worker, coalesce(holder, '') AS holder, version, marker_ms, expires_ms, fence_ms";
    let of_namespace = "FROM flakegen_leases WHERE namespace = $1 AND worker >= 0 AND worker < $2";
    format!(
        "WITH head AS (SELECT {NOW_MS} AS now_ms, m.marker_ms AS in_force, \
           coalesce(m.high_water, 0) AS high_water \
           FROM (SELECT 1) one LEFT JOIN ({mark}) m ON true) \
         SELECT h.now_ms, h.in_force, h.high_water, c.* FROM head h LEFT JOIN LATERAL (\
           (SELECT {columns} {of_namespace} AND holder IS NULL \
              AND marker_ms = coalesce(h.in_force, -1) ORDER BY fence_ms, worker LIMIT 1) \
           UNION ALL \
           (SELECT {columns} {of_namespace} AND holder IS NOT NULL \
              AND marker_ms = coalesce(h.in_force, -1) AND expires_ms <= h.now_ms \
              ORDER BY expires_ms LIMIT 4) \
           UNION ALL \
           (SELECT {columns} {of_namespace} \
              AND (worker IN ($3, h.high_water) OR (worker >= $4 AND worker < $5)))\
         ) c ON true",
        mark = &*MARK_IN_FORCE,
    )
});

/// A swap's new expiry: none for a free record (`$7` 0), else the server's
/// clock plus the TTL.
pub(super) static EXPIRY: LazyLock<String> =
    LazyLock::new(|| format!("CASE WHEN $7::bigint = 0 THEN 0 ELSE {NOW_MS} + $7::bigint END"));

/// When a swap wrote, as it returns it: the clock reading its expiry was
/// taken from. `clock_timestamp()` read again in `RETURNING` runs later, by
/// as long as the server was kept from running between the two (5 ms on a
/// loaded machine), and the expiry would then lie short of the TTL past it.
pub(super) static WRITTEN: LazyLock<String> = LazyLock::new(|| {
    format!("CASE WHEN $7::bigint = 0 THEN {NOW_MS} ELSE expires_ms - $7::bigint END")
});

/// The namespace's marker row at `$3` and in force, its high-water mark
/// raised past `$2`: held against a new marker until the statement ends.
pub(super) static RAISED: LazyLock<String> = LazyLock::new(|| {
    format!(
        "UPDATE flakegen_namespaces SET high_water = greatest(high_water, $2::bigint + 1) \
         WHERE namespace = $1 AND marker_ms = $3 AND stamp = {STAMP} RETURNING 1"
    )
});

/// A renewal: the record at version `$4`, under the marker `$3`, which is
/// held with `FOR SHARE` (a `TRUNCATE` waits for the swap's lock on the
/// table).
pub(super) static SWAP_UPDATE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH marker AS (SELECT 1 FROM flakegen_namespaces WHERE namespace = $1 \
           AND marker_ms = $3 AND stamp = {STAMP} FOR SHARE) \
         UPDATE flakegen_leases SET holder = NULLIF($5::text, ''), version = $6, \
         marker_ms = $3, expires_ms = {expiry}, fence_ms = $8 \
         WHERE namespace = $1 AND worker = $2 AND version = $4 AND marker_ms = $3 \
         AND EXISTS (SELECT 1 FROM marker) RETURNING {written}",
        expiry = &*EXPIRY,
        written = &*WRITTEN,
    )
});

/// A record at version `$4` written under another marker, taken under `$3`.
pub(super) static SWAP_ADOPT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH marker AS ({raised}) \
         UPDATE flakegen_leases SET holder = NULLIF($5::text, ''), version = $6, \
         marker_ms = $3, expires_ms = {expiry}, fence_ms = $8 \
         WHERE namespace = $1 AND worker = $2 AND version = $4 AND marker_ms <> $3 \
         AND EXISTS (SELECT 1 FROM marker) RETURNING {written}",
        raised = &*RAISED,
        expiry = &*EXPIRY,
        written = &*WRITTEN,
    )
});

/// A record where none is (`$4` NULL), under the marker `$3`.
pub(super) static SWAP_INSERT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "WITH marker AS ({raised}) INSERT INTO flakegen_leases \
         (namespace, worker, holder, version, marker_ms, expires_ms, fence_ms) \
         SELECT $1, $2, NULLIF($5::text, ''), $6, $3, {expiry}, $8 \
         WHERE EXISTS (SELECT 1 FROM marker) AND $4::bigint IS NULL \
         ON CONFLICT DO NOTHING RETURNING {written}",
        raised = &*RAISED,
        expiry = &*EXPIRY,
        written = &*WRITTEN,
    )
});

/// Writes the namespace `$1`'s marker where none is in force: the server's
/// clock, rounded up, and later than one of another history it replaces,
/// with a high-water mark of 0. Returns nothing where one is in force.
pub(super) static MARK: LazyLock<String> = LazyLock::new(|| {
    format!(
        "INSERT INTO flakegen_namespaces AS m (namespace, marker_ms, stamp) \
         VALUES ($1, {CEIL_NOW_MS}, {STAMP}) ON CONFLICT (namespace) DO UPDATE \
         SET marker_ms = greatest(excluded.marker_ms, m.marker_ms + 1), \
             stamp = excluded.stamp, high_water = 0 \
         WHERE m.stamp <> excluded.stamp RETURNING marker_ms"
    )
});
