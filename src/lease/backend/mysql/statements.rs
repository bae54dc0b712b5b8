//! The statements of the storage steps, each with what it binds.

use core::fmt;
use std::sync::LazyLock;

/// The server's clock in ms, rounded down: expiry is judged no later than it is.
pub(super) const NOW_MS: &str = "FLOOR(UNIX_TIMESTAMP(NOW(6)) * 1000)";

/// What a marker vouches for, as the server names its history now: the
/// server that confirms writes, when the lease table was created (in
/// seconds: a new table, or a logical restore, changes it), and the token
/// of the table's sentinel row (`worker` -1), which `TRUNCATE` or a
/// `DELETE` of every row takes away. Refers to the lease table: only in
/// statements that know it exists.
macro_rules! stamp {
    () => {
        "CONCAT(@@server_id, '/', @@hostname, ':', @@port, '/', \
         COALESCE((SELECT UNIX_TIMESTAMP(CREATE_TIME) FROM information_schema.TABLES \
         WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'flakegen_leases'), 'none'), '/', \
         COALESCE((SELECT holder FROM flakegen_leases WHERE namespace = '' AND worker = -1), 'none'))"
    };
}

/// Writes the table's sentinel row where it is missing, with a token no
/// other table had: a table's data begins with it.
pub(super) const SENTINEL: &str = "INSERT IGNORE INTO flakegen_leases (namespace, worker, holder, fence_ms) \
     VALUES ('', -1, UUID(), 0)";

/// The namespace `?`'s marker in force and its high-water mark.
pub(super) const MARK_IN_FORCE: &str = concat!(
    "SELECT marker_ms, high_water FROM flakegen_namespaces WHERE namespace = ? AND stamp = ",
    stamp!()
);

/// The server's clock, and the namespace's marker in force and high-water
/// mark (NULL and 0 where none is), set as the session's variables
/// `@flakegen_now`, `@flakegen_marker` and `@flakegen_high` for the
/// statements after it (a read's candidates), and selected.
pub(super) fn head(ns: &str) -> String {
    format!(
        "SET @flakegen_now := {NOW_MS}, @flakegen_marker := NULL, @flakegen_high := 0; \
         SELECT marker_ms, high_water INTO @flakegen_marker, @flakegen_high \
         FROM flakegen_namespaces WHERE namespace = {ns} AND stamp = {stamp}; \
         SELECT @flakegen_now, @flakegen_marker, @flakegen_high",
        ns = Value::Text(ns),
        stamp = stamp!(),
    )
}

/// The columns of a record, in the order [`MysqlRegistry::record`] reads them.
pub(super) const COLUMNS: &str =
    "worker, COALESCE(holder, ''), version, marker_ms, expires_ms, fence_ms";

/// What a read asks for, beyond the namespace.
pub(super) struct Candidates {
    /// The ids in play: `0..workers`.
    pub(super) workers: i64,
    /// The preferred id, -1 for none (or not in play).
    pub(super) prefer: i64,
    /// The probe's first id and the id past its last.
    pub(super) probe: (i64, i64),
}

/// After [`head`]: the records an acquisition chooses from, the free one
/// with the earliest fence and a few expired ones under the marker (through
/// the indexes on `is_free`), and those of the preferred id, the id at the
/// high-water mark (while in play) and the ids probed.
pub(super) fn candidates(ns: &str, c: &Candidates) -> String {
    format!(
        "SET @flakegen_in_play_high := IF(@flakegen_high < {workers}, @flakegen_high, -1); \
         (SELECT {COLUMNS} FROM flakegen_leases WHERE namespace = {ns} \
           AND marker_ms = {marker} AND is_free = 1 AND worker >= 0 AND worker < {workers} \
           ORDER BY fence_ms, worker LIMIT 1) \
         UNION ALL \
         (SELECT {COLUMNS} FROM flakegen_leases WHERE namespace = {ns} \
           AND marker_ms = {marker} AND is_free = 0 AND expires_ms <= @flakegen_now \
           AND worker >= 0 AND worker < {workers} ORDER BY expires_ms LIMIT 4) \
         UNION ALL \
         (SELECT {COLUMNS} FROM flakegen_leases WHERE namespace = {ns} \
           AND (worker IN ({prefer}, @flakegen_in_play_high) \
             OR (worker >= {from} AND worker < {to})))",
        ns = Value::Text(ns),
        marker = "COALESCE(@flakegen_marker, -1)",
        workers = c.workers,
        prefer = c.prefer,
        from = c.probe.0,
        to = c.probe.1,
    )
}

/// What a swap's statements share: the server's clock before it wrote, in
/// `@flakegen_now`, for its expiry and its answer; and the history's stamp,
/// in `@flakegen_stamp`, read once (its lookup in `information_schema` is
/// the costliest part of a write) for the statements after it. A loss
/// between this and the write is one just after the write: its record is
/// under the old marker, which no read after the loss finds in force.
pub(super) static NOW: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SET @flakegen_now := {NOW_MS}, @flakegen_written := 0, @flakegen_stamp := {stamp}",
        stamp = stamp!()
    )
});

/// A record to write: where, under which marker, and what.
pub(super) struct Write<'a> {
    pub(super) ns: &'a str,
    pub(super) worker: i64,
    /// The marker the writer expects in force.
    pub(super) marker: i64,
    /// Empty: free.
    pub(super) holder: &'a str,
    pub(super) version: i64,
    /// Its TTL in ms, 0 for a free record (which never expires).
    pub(super) ttl: i64,
    pub(super) fence: i64,
}

impl Write<'_> {
    /// Its expiry: the TTL past the server's clock before the write.
    fn expires(&self) -> &'static str {
        if self.ttl == 0 {
            "0"
        } else {
            "@flakegen_now + @flakegen_ttl"
        }
    }
}

/// A renewal: the record at version `expected`, under the marker it was
/// written under, which is joined in as it is now (a current read). After
/// [`NOW`].
pub(super) fn swap_update(w: &Write<'_>, expected: i64) -> String {
    update(w, expected, "", "l.marker_ms = m.marker_ms")
}

/// A record at version `expected` written under another marker, taken
/// under the one in force, whose high-water mark it raises in the same
/// statement: after [`swap_update`], when that wrote nothing
/// (`@flakegen_written`).
pub(super) fn swap_adopt(w: &Write<'_>, expected: i64) -> String {
    update(
        w,
        expected,
        ", m.high_water = GREATEST(m.high_water, l.worker + 1)",
        "l.marker_ms <> m.marker_ms AND @flakegen_written = 0",
    )
}

/// The record at version `expected` written as `w`, joined to the marker
/// the writer expects in force: [`swap_update`]'s and [`swap_adopt`]'s one
/// text, with the statement's own further assignments and condition.
fn update(w: &Write<'_>, expected: i64, also_set: &str, only_if: &str) -> String {
    format!(
        "UPDATE flakegen_leases l JOIN flakegen_namespaces m ON m.namespace = l.namespace \
         AND m.marker_ms = {marker} AND m.stamp = @flakegen_stamp \
         SET l.holder = NULLIF({holder}, ''), l.version = {version}, l.marker_ms = m.marker_ms, \
         l.expires_ms = {expires}, l.fence_ms = {fence}{also_set} \
         WHERE l.namespace = {ns} AND l.worker = {worker} AND l.version = {expected} \
         AND {only_if}",
        marker = w.marker,
        holder = Value::Text(w.holder),
        version = w.version,
        expires = w.expires(),
        fence = w.fence,
        ns = Value::Text(w.ns),
        worker = w.worker,
    )
}

/// The high-water mark raised past the record's id, under the marker in
/// force: before a record is inserted, never after.
pub(super) fn raise(w: &Write<'_>) -> String {
    format!(
        "UPDATE flakegen_namespaces SET high_water = GREATEST(high_water, {worker} + 1) \
         WHERE namespace = {ns} AND marker_ms = {marker} AND stamp = @flakegen_stamp",
        worker = w.worker,
        ns = Value::Text(w.ns),
        marker = w.marker,
    )
}

/// A record where none is, under the marker in force.
pub(super) fn swap_insert(w: &Write<'_>) -> String {
    format!(
        "INSERT INTO flakegen_leases \
         (namespace, worker, holder, version, marker_ms, expires_ms, fence_ms) \
         SELECT {ns}, {worker}, NULLIF({holder}, ''), {version}, m.marker_ms, {expires}, {fence} \
         FROM flakegen_namespaces m \
         WHERE m.namespace = {ns} AND m.marker_ms = {marker} AND m.stamp = @flakegen_stamp",
        ns = Value::Text(w.ns),
        worker = w.worker,
        holder = Value::Text(w.holder),
        version = w.version,
        expires = w.expires(),
        fence = w.fence,
        marker = w.marker,
    )
}

/// What a swap whose answer a deadlock took wrote, if its record is at its
/// version (no other write's): the time it says it wrote, the TTL before
/// the expiry, or the server's clock for a free record.
pub(super) fn landed(w: &Write<'_>) -> String {
    format!(
        "SELECT IF({ttl} = 0, {NOW_MS}, expires_ms - {ttl}) FROM flakegen_leases \
         WHERE namespace = {ns} AND worker = {worker} AND version = {version}",
        ttl = w.ttl,
        ns = Value::Text(w.ns),
        worker = w.worker,
        version = w.version,
    )
}

/// Writes the namespace's marker where none is in force: the server's
/// clock, rounded up, and later than one of another history it replaces,
/// with a high-water mark of 0 (the assignments run left to right: the
/// stamp last).
pub(super) const MARK: &str = concat!(
    "INSERT INTO flakegen_namespaces (namespace, marker_ms, stamp) \
     VALUES (?, CEIL(UNIX_TIMESTAMP(NOW(6)) * 1000), ",
    stamp!(),
    ") ON DUPLICATE KEY UPDATE \
     marker_ms = IF(stamp = VALUES(stamp), marker_ms, GREATEST(VALUES(marker_ms), marker_ms + 1)), \
     high_water = IF(stamp = VALUES(stamp), high_water, 0), \
     stamp = VALUES(stamp)"
);

/// A string written into a statement's text, as a hexadecimal literal in
/// utf8mb4: bytes that no quoting, escaping or `sql_mode` of the server can
/// read as anything but the string. Several statements sent as one text
/// query cost one round trip where prepared ones cost one each, and text
/// takes no parameters: each statement above is a function whose values are
/// named in its `format!`, so that one left out, or named twice by mistake
/// for another, does not compile.
#[derive(Clone, Copy, Debug)]
pub(super) enum Value<'a> {
    Text(&'a str),
}

impl fmt::Display for Value<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Text("") => f.write_str("''"),
            Value::Text(text) => {
                f.write_str("_utf8mb4 X'")?;
                for byte in text.bytes() {
                    write!(f, "{byte:02X}")?;
                }
                f.write_str("'")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_string_is_written_as_bytes_no_quote_can_end() {
        assert_eq!(Value::Text("a'b\\").to_string(), "_utf8mb4 X'6127625C'");
        assert_eq!(Value::Text("").to_string(), "''");
    }

    #[test]
    fn a_namespace_reaches_every_statement_as_bytes_only() {
        let ns = "o'; DROP TABLE t; --";
        let w = Write {
            ns,
            worker: 3,
            marker: 5,
            holder: "h'",
            version: 7,
            ttl: 9,
            fence: 11,
        };
        let c = Candidates {
            workers: 8,
            prefer: -1,
            probe: (0, 4),
        };
        for sql in [
            head(ns),
            candidates(ns, &c),
            swap_update(&w, 6),
            swap_adopt(&w, 6),
            raise(&w),
            swap_insert(&w),
            landed(&w),
        ] {
            assert!(!sql.contains("DROP"), "{sql}");
            assert!(!sql.contains("h'"), "{sql}");
            assert!(sql.contains("_utf8mb4 X'"), "{sql}");
        }
    }
}
