//! `srdp_write_audit(catalog, since :=)`: who wrote what in the lake, and was it theirs to write?
//!
//! Reads DuckLake's own snapshot history from the catalog's metadata and lists, per snapshot
//! and table changed, the commit author (srdp's writers set it to their writer name: `dlt`,
//! `dbt`, `io_manager`; srdp's merges to `srdp`), the schema's owner in `srdp.toml` and whether
//! `single_writer` allowed the write, then one row per live schema `srdp.toml` gives to nobody.
//! It is how an auditor checks `single_writer` where the database cannot enforce it: a writer
//! connection can write any schema. A write without a commit author is not allowed while the
//! rule is on; flushes, merges and rewrites keep the rows as they were and are always allowed,
//! including a flush that writes inline deletion markers into a delete file (DuckLake records it
//! as `deleted_from_table`, as it does a `DELETE`): authored `srdp` and with no row changed at
//! that snapshot by `ducklake_table_changes`, it is `flushed`; any other is a deletion, judged
//! by its author (see [`crate::audit`]).
//! Parameters: `catalog` (attached through `srdp_attach_catalog`, any role), `since :=` (a
//! snapshot id, or a timestamp DuckDB can cast to TIMESTAMPTZ; default: every snapshot),
//! `config :=`.
//! Returns, in snapshot order: `catalog, snapshot_id BIGINT, snapshot_time TIMESTAMPTZ, author,
//! commit_message, schema_name, table_name` (NULL for a schema-level change), `change`
//! (`created`, `inserted`, `deleted`, `altered`, `dropped`, `view created`, `view dropped`,
//! `schema created`, `schema dropped`, `flushed`, `compacted`, `rewritten`, or DuckLake's own
//! word),
//! `owner` (the schema's writers in `srdp.toml`), `ownership` (the entry that gives it to them:
//! `schema 'curated'`, `pattern 'dbt_*'`, `schema 'raw' of project 'acme'`, `layer 'raw' of
//! project 'acme'`; NULL when none does), `allowed BOOLEAN, note`; then the
//! `schema not in srdp.toml` rows, whose snapshot columns are NULL (DuckLake's own `main` only
//! once a table or view was created in it, so a fresh lake audits clean).
//! Errors: unknown catalog, catalog not attached, a `since :=` that is neither a snapshot id
//! nor a timestamp.
//!
//! ```sql
//! SELECT snapshot_id, author, schema_name, table_name, change, note
//! FROM srdp_write_audit('lake', since := '2026-01-01') WHERE NOT allowed;
//! ```

use super::{Args, Cell, Column, Shared, SrdpFunction};
use crate::audit::{self, Since};
use crate::config::{CatalogDef, Config};
use crate::error::{Result, SrdpError};
use duckdb::core::{LogicalTypeHandle, LogicalTypeId};
use std::sync::Arc;

pub struct WriteAudit;

pub struct Bound {
    catalog: String,
    config: Arc<Config>,
    def: CatalogDef,
    /// A snapshot id, or a timestamp to read on the runner.
    since: Option<std::result::Result<i64, String>>,
}

impl SrdpFunction for WriteAudit {
    type Bound = Bound;
    const NAME: &'static str = "srdp_write_audit";

    fn positional() -> &'static [&'static str] {
        &["catalog"]
    }

    fn named() -> Vec<(&'static str, LogicalTypeHandle)> {
        vec![("since", LogicalTypeHandle::from(LogicalTypeId::Varchar))]
    }

    fn columns() -> Vec<Column> {
        vec![
            Column::text("catalog"),
            Column::bigint("snapshot_id"),
            Column::timestamptz("snapshot_time"),
            Column::text("author"),
            Column::text("commit_message"),
            Column::text("schema_name"),
            Column::text("table_name"),
            Column::text("change"),
            Column::text("owner"),
            Column::text("ownership"),
            Column::boolean("allowed"),
            Column::text("note"),
        ]
    }

    fn bind(args: &Args) -> Result<Self::Bound> {
        let catalog = args.required_text(0)?;
        let config = args.config()?;
        let def = config.catalog(&catalog)?.clone();
        let since = args
            .text("since")?
            .map(|s| audit::parse_since(&s))
            .transpose()?;
        Ok(Bound {
            catalog,
            config,
            def,
            since,
        })
    }

    fn run(b: &Self::Bound, shared: &Shared) -> Result<Vec<Vec<Cell>>> {
        let rows = shared
            .runner
            .with_lake_connection(&b.catalog, None, |lake, conn, spec| {
                let since = match &b.since {
                    None => Since::All,
                    Some(Ok(id)) => Since::Snapshot(*id),
                    Some(Err(text)) => match lake.timestamp_micros(text)? {
                        Some(t) => Since::Time(t),
                        None => {
                            return Err(SrdpError::InvalidArgument(format!(
                                "since := must be a snapshot id or a timestamp such as \
                             '2026-01-31 12:00:00+00', got '{text}'"
                            )))
                        }
                    },
                };
                let min_id = match since {
                    Since::Snapshot(id) => id,
                    _ => 0,
                };
                let (snapshots, versions, schemas) = lake.audit_history(min_id)?;
                let unreadable = |e: String| {
                    SrdpError::InvalidArgument(format!(
                        "the snapshot history of catalog '{}' could not be read: {e}",
                        b.catalog
                    ))
                };
                let checked: audit::RowChecks = audit::row_checks(&snapshots, &versions, &since)
                    .map_err(unreadable)?
                    .into_iter()
                    .map(|check| {
                        let found = conn
                            .query_row(&check.query(&spec.alias), [], |r| r.get::<_, i64>(0))
                            .map_err(|e| crate::redact::redact(&e.to_string()));
                        (check, found)
                    })
                    .collect();
                let mut rows =
                    audit::audit(&b.config, &b.def, &snapshots, &versions, &since, &checked)
                        .map_err(unreadable)?;
                rows.extend(audit::unnamed_schemas(
                    &b.config, &b.def, &schemas, &versions,
                ));
                Ok(rows)
            })?;
        Ok(rows
            .into_iter()
            .map(|r| {
                vec![
                    b.catalog.clone().into(),
                    r.snapshot_id.into(),
                    r.snapshot_time.map_or(Cell::Null, Cell::Timestamp),
                    r.author.into(),
                    r.message.into(),
                    r.schema.into(),
                    r.table.into(),
                    r.change.into(),
                    r.owner.into(),
                    r.ownership.into(),
                    r.allowed.into(),
                    r.note.into(),
                ]
            })
            .collect())
    }
}
