//! `srdp_compact(catalog, schema_name :=, table_name :=, dry_run := false,
//! honor_auto_compact := false, merge_batch_files :=)`: flushes, rewrites files that carry
//! deletes and merges adjacent small Parquet files, one dataset at a time.
//!
//! For each selected dataset, in (schema, table) order ([`crate::maintenance::sequence`]):
//! `ducklake_flush_inlined_data`, then `ducklake_rewrite_data_files(alias, table, schema => ...,
//! delete_threshold => ...)` when files carry deletes, then `ducklake_merge_adjacent_files(alias,
//! table, schema => ...)`; each step commits on its own and is retried like `srdp_flush`. The
//! rewrite takes every file under the target file size that carries a delete, and a file at or
//! above it once its deleted share reaches DuckLake's `rewrite_delete_threshold` option (table,
//! schema or catalog), else srdp's default 0.2 ([`crate::maintenance::rewrite`]). DuckLake
//! merges and rewrites only files of the same partition and schema version, keeps the replaced
//! files (scheduled for deletion, never deleted here) and keeps time travel; srdp never expires
//! snapshots or deletes files.
//! Parameters: as `srdp_flush`.
//! Returns one row per dataset: `catalog, schema_name, table_name, rows_flushed BIGINT,
//! files_before BIGINT` (live data files before the flush), `files_after BIGINT` (after the
//! merge; NULL for a dry run), `files_processed BIGINT, files_created BIGINT` (by the merge;
//! NULL for a dry run), `files_rewritten BIGINT` (data files the rewrite replaced; for a dry run,
//! the files it would), `deletes_applied BIGINT` (deleted rows those files carried and the
//! rewrite left out; for a dry run, would), `attempts BIGINT` (the most attempts any step
//! needed; 1 = no retry), `duration_ms BIGINT`, `status` (`compacted`, `nothing to do`,
//! `planned`, `skipped: auto_compact is false`; notes follow for inline deletion markers written
//! to a delete file, files rewritten, small files whose rewrite waits, bounded merges, deletes
//! re-applied after a race, and an explicit step: see [`crate::maintenance::status`]).
//! `auto_compact = false` (table, schema or catalog option) excludes a dataset from DuckLake's
//! bulk calls, and DuckLake 1.0 skips it even when it is named. srdp's steps name one dataset
//! each, so they are explicit (ADR 000): each step sets the option to true at the scope that
//! holds the false and back to false inside its own transaction, which leaves the catalog's
//! options exactly as they were; after a failed attempt srdp re-attaches the catalog (DuckLake
//! keeps the flipped value in memory after a ROLLBACK). `honor_auto_compact := true` skips such
//! datasets instead (`skipped: auto_compact is false`).
//! srdp reads the catalog once per call ([`crate::maintenance::planner`]) and calls DuckLake only
//! for steps that may do something: no flush without inlined rows or deletion markers, no
//! rewrite without a file that needs it, no merge without two small files in one partition
//! (unless the flush or rewrite just wrote files), none for a skipped dataset. `attempts` is 0
//! when srdp called nothing.
//! The calling session's DuckLake settings (`ducklake_target_file_size`, ...; see
//! [`crate::maintenance::CALLER_SETTINGS`]) apply to srdp's steps for the call, session or global.
//! A dataset with more than `merge_batch_files` files under the target size (default 2,000, or
//! 5,000 when DuckDB runs with one thread) is merged in bounded calls of about that many input
//! files each, so memory does not grow with the file
//! count ([`crate::maintenance::batched`]; DuckDB's global `enable_external_file_cache` is off
//! while it runs); the status then adds `; merged in N bounded calls`.
//! Errors: as `srdp_flush`; `merge_batch_files` under 2 names the parameter; a
//! `rewrite_delete_threshold` option that is not a share from 0 to 1 names the option.
//!
//! ```sql
//! SELECT schema_name, table_name, files_before, files_after, files_rewritten, status
//! FROM srdp_compact('lake');
//! ```

use super::selection::Selection;
use super::{Args, Cell, Column, Shared, SrdpFunction};
use crate::error::Result;
use crate::error::SrdpError;
use crate::maintenance::batched::{self, DEFAULT_BATCH_FILES, ONE_THREAD_BATCH_FILES};
use crate::maintenance::{Call, Outcome, Steps};
use duckdb::core::{LogicalTypeHandle, LogicalTypeId};

pub struct Compact;

pub struct Bound {
    sel: Selection,
    dry_run: bool,
    /// Skip datasets DuckLake excludes with `auto_compact = false`, as DuckLake's bulk calls do.
    honor_auto_compact: bool,
    /// The caller's DuckLake settings (see [`crate::maintenance::CALLER_SETTINGS`]).
    settings: Vec<(String, Option<String>)>,
    /// About the most input files one merge call takes (see [`crate::maintenance::batched`]);
    /// `None`: the default for DuckDB's thread count.
    batch_files: Option<u64>,
}

impl SrdpFunction for Compact {
    type Bound = Bound;
    const NAME: &'static str = "srdp_compact";

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
        named.push((
            "merge_batch_files",
            LogicalTypeHandle::from(LogicalTypeId::Bigint),
        ));
        named
    }

    fn columns() -> Vec<Column> {
        vec![
            Column::text("catalog"),
            Column::text("schema_name"),
            Column::text("table_name"),
            Column::bigint("rows_flushed"),
            Column::bigint("files_before"),
            Column::bigint("files_after"),
            Column::bigint("files_processed"),
            Column::bigint("files_created"),
            Column::bigint("files_rewritten"),
            Column::bigint("deletes_applied"),
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
            batch_files: batch_files(args.bigint("merge_batch_files")?)?,
        })
    }

    fn run(b: &Self::Bound, shared: &Shared) -> Result<Vec<Vec<Cell>>> {
        let writer_for = (!b.dry_run).then_some("compaction");
        shared.runner.with_lake(&b.sel.catalog, writer_for, |lake| {
            lake.use_caller_settings(&b.settings)?;
            let batch_files = match b.batch_files {
                Some(n) => n,
                None => batched::default_batch_files(lake.threads()?),
            };
            let call = Call {
                function: Self::NAME,
                steps: Steps::Compact { batch_files },
                dry_run: b.dry_run,
                honor_auto_compact: b.honor_auto_compact,
            };
            let outcomes = lake.maintain(b.sel.schema.as_deref(), b.sel.table.as_deref(), &call)?;
            Ok(outcomes
                .iter()
                .map(|(d, outcome)| row(&b.sel.catalog, &d.schema, &d.table, outcome, &call.steps))
                .collect())
        })
    }
}

/// One result row; a dry run's merge columns are NULL.
fn row(catalog: &str, schema: &str, table: &str, o: &Outcome, steps: &Steps) -> Vec<Cell> {
    let merged = |n: i64| if o.planned { Cell::Null } else { n.into() };
    vec![
        catalog.into(),
        schema.into(),
        table.into(),
        o.rows_flushed.into(),
        o.files_before.into(),
        o.files_after.map_or(Cell::Null, Cell::from),
        merged(o.merged.processed),
        merged(o.merged.created),
        o.rewritten.files.into(),
        o.rewritten.deletes.into(),
        i64::from(o.attempts).into(),
        o.duration_ms.into(),
        o.status(steps).into(),
    ]
}

/// `merge_batch_files`: at least 2 (absent: the default, see [`batched::default_batch_files`]).
fn batch_files(value: Option<i64>) -> Result<Option<u64>> {
    match value {
        None => Ok(None),
        Some(n) if n >= 2 => Ok(Some(n.unsigned_abs())),
        Some(n) => Err(SrdpError::InvalidArgument(format!(
            "srdp_compact: merge_batch_files must be at least 2 (the most input files one merge \
             call takes), got {n}; leave it out for the default ({DEFAULT_BATCH_FILES} files, {ONE_THREAD_BATCH_FILES} with one thread)"
        ))),
    }
}
