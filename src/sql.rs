//! [`Snowflake`] in PostgreSQL, as a `BIGINT` (feature `postgres`).
//!
//! With the `postgres` feature, `Snowflake` is `ToSql` and `FromSql` for the
//! `postgres` crate (through `postgres-types`), so IDs go into and come out of
//! `BIGINT` columns as they are. Only `BIGINT` (`INT8`): a smaller integer
//! column would cut IDs off, so it is refused. An ID above `i64::MAX` (see
//! [Storing IDs](crate#storing-ids)) fails to convert instead of wrapping to a
//! negative number, and a negative value read back is an error too.
//!
//! # Examples
//!
//! ```no_run
//! use flakegen::{IdGenerator, Snowflake, AtomicGenerator};
//!
//! let mut client = postgres::Client::connect("postgres://app@localhost/app", postgres::NoTls)?;
//! client.batch_execute("CREATE TABLE IF NOT EXISTS orders (id BIGINT PRIMARY KEY, item TEXT)")?;
//! let generator = AtomicGenerator::new(1)?;
//! let id = generator.next_id()?;
//! client.execute("INSERT INTO orders (id, item) VALUES ($1, $2)", &[&id, &"tea"])?;
//! let back: Snowflake = client.query_one("SELECT id FROM orders WHERE id = $1", &[&id])?.get(0);
//! assert_eq!(back, id);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use bytes::BytesMut;
use postgres_types::{FromSql, IsNull, ToSql, Type, to_sql_checked};

use crate::id::Snowflake;

impl ToSql for Snowflake {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        self.to_i64()?.to_sql(ty, out)
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::INT8
    }

    to_sql_checked!();
}

impl<'a> FromSql<'a> for Snowflake {
    fn from_sql(
        ty: &Type,
        raw: &'a [u8],
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Snowflake::from_i64(i64::from_sql(ty, raw)?)?)
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::INT8
    }
}
