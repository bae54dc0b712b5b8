//! The statements of the storage steps, each with what it binds.

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

/// The server's clock, and the namespace `?`'s marker in force and
/// high-water mark (NULL and 0 where none is), set as the session's
/// variables `@flakegen_now`, `@flakegen_marker` and `@flakegen_high` for
/// the statements after it (a read's candidates), and selected.
pub(super) static HEAD: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SET @flakegen_now := {NOW_MS}, @flakegen_marker := NULL, @flakegen_high := 0; \
         SELECT marker_ms, high_water INTO @flakegen_marker, @flakegen_high \
         FROM flakegen_namespaces WHERE namespace = ? AND stamp = {stamp}; \
         SELECT @flakegen_now, @flakegen_marker, @flakegen_high",
        stamp = stamp!(),
    )
});

/// The columns of a record, in the order [`MysqlRegistry::record`] reads them.
pub(super) const COLUMNS: &str =
    "worker, COALESCE(holder, ''), version, marker_ms, expires_ms, fence_ms";

/// The records an acquisition chooses from: the free one with the earliest
/// fence and a few expired ones under the marker (through the indexes on
/// `is_free`), and those of the preferred id, the id at the high-water mark
/// and the ids probed. Binds the namespace, the marker (-1: none) and the
/// ids in play; the namespace, the marker, the server's now and the ids in
/// play; the namespace, the preferred id and the mark (-1: none, or not in
/// play), and the probe's first id and the id past its last.
pub(super) static CANDIDATES: LazyLock<String> = LazyLock::new(|| {
    format!(
        "(SELECT {COLUMNS} FROM flakegen_leases WHERE namespace = ? \
           AND marker_ms = ? AND is_free = 1 AND worker >= 0 AND worker < ? \
           ORDER BY fence_ms, worker LIMIT 1) \
         UNION ALL \
         (SELECT {COLUMNS} FROM flakegen_leases WHERE namespace = ? \
           AND marker_ms = ? AND is_free = 0 AND expires_ms <= ? \
           AND worker >= 0 AND worker < ? ORDER BY expires_ms LIMIT 4) \
         UNION ALL \
         (SELECT {COLUMNS} FROM flakegen_leases WHERE namespace = ? \
           AND (worker IN (?, ?) OR (worker >= ? AND worker < ?)))"
    )
});

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

/// A renewal: the record at its version, under the marker it was written
/// under, which is joined in as it is now (a current read). After [`NOW`].
pub(super) const SWAP_UPDATE: &str = "UPDATE flakegen_leases l JOIN flakegen_namespaces m ON m.namespace = l.namespace \
     AND m.marker_ms = ? AND m.stamp = @flakegen_stamp \
     SET l.holder = NULLIF(?, ''), l.version = ?, l.marker_ms = m.marker_ms, \
     l.expires_ms = ?, l.fence_ms = ? \
     WHERE l.namespace = ? AND l.worker = ? AND l.version = ? AND l.marker_ms = m.marker_ms";

/// A record at its version written under another marker, taken under the
/// one in force, whose high-water mark it raises in the same statement:
/// after [`SWAP_UPDATE`], when that wrote nothing (`@flakegen_written`).
pub(super) const SWAP_ADOPT: &str = "UPDATE flakegen_leases l JOIN flakegen_namespaces m ON m.namespace = l.namespace \
     AND m.marker_ms = ? AND m.stamp = @flakegen_stamp \
     SET l.holder = NULLIF(?, ''), l.version = ?, l.marker_ms = m.marker_ms, \
     l.expires_ms = ?, l.fence_ms = ?, m.high_water = GREATEST(m.high_water, l.worker + 1) \
     WHERE l.namespace = ? AND l.worker = ? AND l.version = ? AND l.marker_ms <> m.marker_ms \
     AND @flakegen_written = 0";

/// The high-water mark raised past a worker, under the marker in force:
/// before a record is inserted, never after.
pub(super) const RAISE: &str = "UPDATE flakegen_namespaces SET high_water = GREATEST(high_water, ? + 1) \
     WHERE namespace = ? AND marker_ms = ? AND stamp = @flakegen_stamp";

/// A record where none is, under the marker in force.
pub(super) const SWAP_INSERT: &str = "INSERT INTO flakegen_leases \
     (namespace, worker, holder, version, marker_ms, expires_ms, fence_ms) \
     SELECT ?, ?, NULLIF(?, ''), ?, m.marker_ms, ?, ? FROM flakegen_namespaces m \
     WHERE m.namespace = ? AND m.marker_ms = ? AND m.stamp = @flakegen_stamp";

/// What a swap whose answer a deadlock took wrote, if its record is at its
/// version (no other write's): the time it says it wrote, the TTL before
/// the expiry, or the server's clock for a free record. Binds the TTL
/// twice, the namespace, the id and the version.
pub(super) static LANDED: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT IF(? = 0, {NOW_MS}, expires_ms - ?) FROM flakegen_leases \
         WHERE namespace = ? AND worker = ? AND version = ?"
    )
});

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

/// A value written into a statement's text. Several statements sent as one
/// text query cost one round trip where prepared ones cost one each, and
/// text takes no parameters.
#[derive(Clone, Copy, Debug)]
pub(super) enum Value<'a> {
    Int(i64),
    /// A string, written as a hexadecimal literal in utf8mb4: bytes that no
    /// quoting, escaping or `sql_mode` of the server can read as anything
    /// but the string.
    Text(&'a str),
    /// An expression of the statements' own, never of the caller's data.
    Sql(&'static str),
}

/// `sql` with each `?` replaced, in order, by one of `values`. The
/// statements here hold no `?` inside their own quotes.
pub(super) fn bind(sql: &str, values: &[Value<'_>]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(sql.len() + 32 * values.len());
    let mut values = values.iter();
    for (i, piece) in sql.split('?').enumerate() {
        if i > 0 {
            match values.next() {
                Some(Value::Int(n)) => {
                    let _ = write!(out, "{n}");
                }
                Some(Value::Text("")) => out.push_str("''"),
                Some(Value::Text(text)) => {
                    out.push_str("_utf8mb4 X'");
                    for byte in text.bytes() {
                        let _ = write!(out, "{byte:02X}");
                    }
                    out.push('\'');
                }
                Some(Value::Sql(expression)) => out.push_str(expression),
                None => debug_assert!(false, "fewer values than parameters in {sql}"),
            }
        }
        out.push_str(piece);
    }
    debug_assert!(
        values.next().is_none(),
        "more values than parameters in {sql}"
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_statement_writes_strings_as_bytes_no_quote_can_end() {
        let sql = bind(
            "SELECT ?, ?, ?, ? FROM t",
            &[
                Value::Int(-1),
                Value::Text("a'b\\"),
                Value::Text(""),
                Value::Sql("@flakegen_now"),
            ],
        );
        assert_eq!(
            sql,
            "SELECT -1, _utf8mb4 X'6127625C', '', @flakegen_now FROM t"
        );
    }

    #[test]
    fn every_statement_bound_in_text_has_no_parameter_in_its_quotes() {
        for sql in [
            &*HEAD,
            &*CANDIDATES,
            SWAP_UPDATE,
            SWAP_ADOPT,
            RAISE,
            SWAP_INSERT,
        ] {
            let mut quoted = false;
            for c in sql.chars() {
                match c {
                    '\'' => quoted = !quoted,
                    '?' => assert!(!quoted, "a ? in quotes in {sql}"),
                    _ => {}
                }
            }
        }
    }
}
