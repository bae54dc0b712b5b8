//! [`Snowflake`](crate::Snowflake) in SQL databases, as a signed 64-bit `BIGINT` (features
//! `postgres` and `sqlx`).
//!
//! The rules, alike for every driver: an ID above `i64::MAX` (see
//! [Storing IDs](crate#storing-ids)) fails to encode instead of wrapping to a
//! negative number, and a negative value read back fails to decode, each
//! with [`IdError`](crate::IdError)'s text, which says what to do.
//!
//! # sqlx
//!
//! With the `sqlx` feature, `Snowflake` is `sqlx::Type`, `Encode` and
//! `Decode` for every database whose driver has them for `i64`: PostgreSQL
//! (`INT8`), MySQL and MariaDB (`BIGINT`), SQLite (`INTEGER`). It works with
//! sqlx 0.8. A MySQL `BIGINT UNSIGNED` column is refused, as sqlx refuses it
//! for an `i64`: use a signed `BIGINT`, which every ID up to `i64::MAX` fits,
//! as the other databases do.
//!
//! ```text
//! // sqlx = { version = "0.8", features = ["runtime-tokio", "mysql"] }
//! // (what the repository's integration/tests/sqlx.rs runs on all three databases)
//! sqlx::query("INSERT INTO orders (id, item) VALUES (?, ?)")
//!     .bind(generator.next_id()?)
//!     .bind("tea")
//!     .execute(&pool)
//!     .await?;
//! let id: Snowflake = sqlx::query_scalar("SELECT id FROM orders LIMIT 1").fetch_one(&pool).await?;
//! ```
//!
//! # postgres
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
//! # #[cfg(feature = "postgres")]
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use flakegen::{IdGenerator, Snowflake, AtomicGenerator};
//! use tokio_postgres::NoTls;
//!
//! // The `postgres` crate's blocking client takes the same parameters.
//! let (client, connection) = tokio_postgres::connect("postgres://app@localhost/app", NoTls).await?;
//! tokio::spawn(connection);
//! client.batch_execute("CREATE TABLE IF NOT EXISTS orders (id BIGINT PRIMARY KEY, item TEXT)").await?;
//! let generator = AtomicGenerator::new(1)?;
//! let id = generator.next_id()?;
//! client.execute("INSERT INTO orders (id, item) VALUES ($1, $2)", &[&id, &"tea"]).await?;
//! let back: Snowflake = client.query_one("SELECT id FROM orders WHERE id = $1", &[&id]).await?.get(0);
//! assert_eq!(back, id);
//! # Ok(())
//! # }
//! # fn main() {}
//! ```

#[cfg(feature = "postgres")]
mod postgres {
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
}

#[cfg(feature = "sqlx")]
mod sqlx {
    use sqlx_core::database::Database;
    use sqlx_core::decode::Decode;
    use sqlx_core::encode::{Encode, IsNull};
    use sqlx_core::error::BoxDynError;
    use sqlx_core::types::Type;

    use crate::id::Snowflake;

    /// Whatever type the database gives an `i64`.
    impl<DB: Database> Type<DB> for Snowflake
    where
        i64: Type<DB>,
    {
        fn type_info() -> DB::TypeInfo {
            <i64 as Type<DB>>::type_info()
        }

        fn compatible(ty: &DB::TypeInfo) -> bool {
            <i64 as Type<DB>>::compatible(ty)
        }
    }

    impl<'q, DB: Database> Encode<'q, DB> for Snowflake
    where
        i64: Encode<'q, DB>,
    {
        fn encode_by_ref(
            &self,
            buf: &mut <DB as Database>::ArgumentBuffer<'q>,
        ) -> Result<IsNull, BoxDynError> {
            self.to_i64()?.encode_by_ref(buf)
        }
    }

    impl<'r, DB: Database> Decode<'r, DB> for Snowflake
    where
        i64: Decode<'r, DB>,
    {
        fn decode(value: <DB as Database>::ValueRef<'r>) -> Result<Self, BoxDynError> {
            Ok(Snowflake::from_i64(<i64 as Decode<'r, DB>>::decode(
                value,
            )?)?)
        }
    }
}
