//! `srdp_postgres_roles(catalog, reader_role :=, writer_role :=)`: the SQL that creates a
//! least-privilege reader role and writer role for a PostgreSQL catalog's metadata schema.
//!
//! Nothing is executed: a DBA (a superuser, or a role with CREATEROLE that owns the database)
//! runs the statements in order with psql, once before the first writer attach and again after
//! changes (every statement is idempotent), then sets the passwords
//! (`ALTER ROLE ... PASSWORD '...'`) and creates the DuckDB secrets named by `reader_secret` /
//! `writer_secret` with those credentials.
//! Parameters: `catalog` (a PostgreSQL catalog), `reader_role :=` (default `<catalog>_reader`),
//! `writer_role :=` (default `<catalog>_writer`), `config :=`.
//! Returns one row per statement, in order: `seq BIGINT, applies_to` (`reader`, `writer`,
//! `both`), `statement`.
//! Errors: unknown catalog, a catalog that is not on PostgreSQL, no dbname, equal role names.
//!
//! ```sql
//! SELECT statement FROM srdp_postgres_roles('lake') ORDER BY seq;
//! ```

use super::{Args, Cell, Column, Shared, SrdpFunction};
use crate::error::Result;
use crate::roles;
use duckdb::core::{LogicalTypeHandle, LogicalTypeId};

pub struct PostgresRoles;

impl SrdpFunction for PostgresRoles {
    type Bound = Vec<Vec<Cell>>;
    const NAME: &'static str = "srdp_postgres_roles";

    fn positional() -> &'static [&'static str] {
        &["catalog"]
    }

    fn named() -> Vec<(&'static str, LogicalTypeHandle)> {
        ["reader_role", "writer_role"]
            .into_iter()
            .map(|n| (n, LogicalTypeHandle::from(LogicalTypeId::Varchar)))
            .collect()
    }

    fn columns() -> Vec<Column> {
        vec![
            Column::bigint("seq"),
            Column::text("applies_to"),
            Column::text("statement"),
        ]
    }

    fn bind(args: &Args) -> Result<Self::Bound> {
        let catalog = args.required_text(0)?;
        let reader = args
            .text("reader_role")?
            .unwrap_or_else(|| format!("{catalog}_reader"));
        let writer = args
            .text("writer_role")?
            .unwrap_or_else(|| format!("{catalog}_writer"));
        let config = args.config()?;
        let def = config.catalog(&catalog)?;
        Ok(roles::postgres_roles(def, &reader, &writer)?
            .into_iter()
            .enumerate()
            .map(|(i, s)| vec![(i as i64 + 1).into(), s.applies_to.into(), s.sql.into()])
            .collect())
    }

    fn run(rows: &Self::Bound, _shared: &Shared) -> Result<Vec<Vec<Cell>>> {
        Ok(rows.clone())
    }
}
