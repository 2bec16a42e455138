//! `srdp_flush(catalog, schema_name :=, table_name :=, dry_run := false,
//! honor_auto_compact := false)`: writes inlined rows
//! out to Parquet, one dataset at a time.
//!
//! For each selected dataset, in (schema, table) order, one
//! `ducklake_flush_inlined_data(alias, schema_name => ..., table_name => ...)` that commits on
//! its own, retried on transaction conflicts and busy catalogs (`max_retry_seconds`, doubling waits
//! from `retry_backoff_ms`, capped at 250 ms, jittered). Never expires snapshots or deletes files.
//! The calling session's DuckLake settings apply to the call, and datasets excluded by
//! `auto_compact = false` are flushed explicitly unless `honor_auto_compact := true`, as for
//! `srdp_compact`.
//! Parameters: `catalog` (attached as writer, except for a dry run), `schema_name :=`,
//! `table_name :=`, `dry_run := false` (true: return the planned rows, change nothing),
//! `config :=`.
//! Returns one row per dataset: `catalog, schema_name, table_name, rows_flushed BIGINT`
//! (physical inlined rows written out; for a dry run, the rows that would be), `attempts BIGINT`
//! (0 for a dry run), `duration_ms BIGINT`, `status` (`flushed`, `nothing to do`, `planned`,
//! `skipped: auto_compact is false`).
//! Errors: unknown catalog, schema or dataset; a read-only attach; a step that fails for good
//! (names the dataset and the datasets already committed).
//!
//! ```sql
//! SELECT * FROM srdp_flush('lake', schema_name := 'raw');
//! ```

use super::selection::Selection;
use super::{Args, Cell, Column, Shared, SrdpFunction};
use crate::error::Result;
use crate::maintenance::{Call, Outcome, Steps};
use duckdb::core::{LogicalTypeHandle, LogicalTypeId};

pub struct Flush;

pub struct Bound {
    sel: Selection,
    dry_run: bool,
    /// Skip datasets DuckLake excludes with `auto_compact = false`, as DuckLake's bulk calls do.
    honor_auto_compact: bool,
    /// The caller's DuckLake settings (see [`crate::maintenance::CALLER_SETTINGS`]).
    settings: Vec<(String, Option<String>)>,
}

impl SrdpFunction for Flush {
    type Bound = Bound;
    const NAME: &'static str = "srdp_flush";

    fn positional() -> &'static [&'static str] {
        &["catalog"]
    }

    fn named() -> Vec<(&'static str, LogicalTypeHandle)> {
        let mut named = Selection::named();
        named.push(("dry_run", LogicalTypeHandle::from(LogicalTypeId::Boolean)));
        named.push((
            "honor_auto_compact",
            LogicalTypeHandle::from(LogicalTypeId::Boolean),
        ));
        named
    }

    fn columns() -> Vec<Column> {
        vec![
            Column::text("catalog"),
            Column::text("schema_name"),
            Column::text("table_name"),
            Column::bigint("rows_flushed"),
            Column::bigint("attempts"),
            Column::bigint("duration_ms"),
            Column::text("status"),
        ]
    }

    fn bind(args: &Args) -> Result<Self::Bound> {
        Ok(Bound {
            sel: Selection::bind(args)?,
            dry_run: args.boolean("dry_run")?.unwrap_or(false),
            honor_auto_compact: args.boolean("honor_auto_compact")?.unwrap_or(false),
            settings: args.caller_settings(crate::maintenance::CALLER_SETTINGS),
        })
    }

    fn run(b: &Self::Bound, shared: &Shared) -> Result<Vec<Vec<Cell>>> {
        let writer_for = (!b.dry_run).then_some("flushing");
        shared.runner.with_lake(&b.sel.catalog, writer_for, |lake| {
            lake.use_caller_settings(&b.settings)?;
            let call = Call {
                function: Self::NAME,
                steps: Steps::Flush,
                dry_run: b.dry_run,
                honor_auto_compact: b.honor_auto_compact,
            };
            let outcomes = lake.maintain(b.sel.schema.as_deref(), b.sel.table.as_deref(), &call)?;
            Ok(outcomes
                .iter()
                .map(|(d, outcome)| row(&b.sel.catalog, &d.schema, &d.table, outcome))
                .collect())
        })
    }
}

/// One result row.
fn row(catalog: &str, schema: &str, table: &str, o: &Outcome) -> Vec<Cell> {
    vec![
        catalog.into(),
        schema.into(),
        table.into(),
        o.rows_flushed.into(),
        i64::from(o.attempts).into(),
        o.duration_ms.into(),
        o.status(&Steps::Flush).into(),
    ]
}
