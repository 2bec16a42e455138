//! `srdp_compact(catalog, schema_name :=, table_name :=, dry_run := false,
//! honor_auto_compact := false, merge_batch_files :=)`: flushes, then
//! merges adjacent small Parquet files, one dataset at a time.
//!
//! For each selected dataset, in (schema, table) order: `ducklake_flush_inlined_data` (commits
//! on its own), then `ducklake_merge_adjacent_files(alias, table, schema => ...)` (commits on
//! its own), each retried like `srdp_flush`. DuckLake merges only files of the same partition
//! and schema version, keeps the replaced files (scheduled for deletion, never deleted here) and
//! keeps time travel; srdp never expires snapshots or deletes files.
//! Parameters: as `srdp_flush`.
//! Returns one row per dataset: `catalog, schema_name, table_name, rows_flushed BIGINT,
//! files_before BIGINT` (live data files before the flush), `files_after BIGINT` (after the
//! merge; NULL for a dry run), `files_processed BIGINT, files_created BIGINT` (by the merge;
//! NULL for a dry run), `attempts BIGINT` (the most attempts any step needed; 1 = no retry),
//! `duration_ms BIGINT`, `status` (`compacted`, `nothing to do`, `planned`,
//! `skipped: auto_compact is false`; a flush of inline deletion markers adds `; N inline
//! deletion markers written to a delete file`; an explicit step adds `; explicit: auto_compact
//! is false for bulk calls only`).
//! `auto_compact = false` (table, schema or catalog option) excludes a dataset from DuckLake's
//! bulk calls, and DuckLake 1.0 skips it even when it is named. srdp's steps name one dataset
//! each, so they are explicit (ADR 000): each step sets the option to true at the scope that
//! holds the false and back to false inside its own transaction, which leaves the catalog's
//! options exactly as they were; after a failed attempt srdp re-attaches the catalog (DuckLake
//! keeps the flipped value in memory after a ROLLBACK). `honor_auto_compact := true` skips such
//! datasets instead (`skipped: auto_compact is false`).
//! srdp reads the catalog once per call ([`crate::maintenance::planner`]) and calls DuckLake only
//! for steps that may do something: no flush without inlined rows or deletion markers, no merge
//! without two small files in one partition (unless the flush just wrote files), none for a
//! skipped dataset. `attempts` is 0 when srdp called nothing.
//! The calling session's DuckLake settings (`ducklake_target_file_size`, ...; see
//! [`crate::maintenance::CALLER_SETTINGS`]) apply to srdp's steps for the call, session or global.
//! A dataset with more than `merge_batch_files` files under the target size (default 2,000, or
//! 5,000 when DuckDB runs with one thread) is merged in bounded calls of about that many input
//! files each, so memory does not grow with the file
//! count ([`crate::maintenance::batched`]; DuckDB's global `enable_external_file_cache` is off
//! while it runs); the status then adds `; merged in N bounded calls`.
//! Errors: as `srdp_flush`; `merge_batch_files` under 2 names the parameter.
//!
//! ```sql
//! SELECT schema_name, table_name, files_before, files_after, status FROM srdp_compact('lake');
//! ```

use super::selection::Selection;
use super::{Args, Cell, Column, Shared, SrdpFunction};
use crate::error::Result;
use crate::error::SrdpError;
use crate::maintenance::batched::{self, DEFAULT_BATCH_FILES, ONE_THREAD_BATCH_FILES};
use crate::maintenance::planner::{self, DatasetState};
use crate::maintenance::{elapsed_ms, Lake};
use crate::plan;
use duckdb::core::{LogicalTypeHandle, LogicalTypeId};
use std::time::Instant;

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
            let datasets = lake.select(b.sel.schema.as_deref(), b.sel.table.as_deref())?;
            let options = lake.auto_compact_options()?;
            let planned = lake.plan(&datasets)?;
            let batch_files = match b.batch_files {
                Some(n) => n,
                None => batched::default_batch_files(lake.threads()?),
            };
            let mut rows = Vec::with_capacity(datasets.len());
            let mut done = Vec::new();
            for d in &datasets {
                let start = Instant::now();
                let upkeep = plan::upkeep(&options, d, b.honor_auto_compact);
                let state = planned.state(d.table_id);
                let cells = if b.dry_run {
                    vec![
                        (if upkeep.runs() { state.inlined_rows } else { 0 }).into(),
                        state.files.into(),
                        Cell::Null,
                        Cell::Null,
                        Cell::Null,
                        0i64.into(),
                        elapsed_ms(start).into(),
                        plan::planned_status(upkeep.runs()).into(),
                    ]
                } else {
                    let step = Step {
                        state,
                        upkeep,
                        batch_files,
                        target: planned.target(),
                    };
                    compact_one(lake, d, step, &done, start)?
                };
                let mut row: Vec<Cell> = vec![
                    b.sel.catalog.clone().into(),
                    d.schema.clone().into(),
                    d.table.clone().into(),
                ];
                row.extend(cells);
                rows.push(row);
                done.push(d.name());
            }
            Ok(rows)
        })
    }
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

/// What the call knows about one dataset's steps.
struct Step {
    state: DatasetState,
    upkeep: plan::Upkeep,
    batch_files: u64,
    /// The target file size the plan counted small files with, in bytes.
    target: u64,
}

/// Flush and merge of one dataset, each called only when the plan cannot prove it idle (and
/// neither for a dataset `auto_compact = false` excludes when the caller honours that).
fn compact_one(
    lake: &Lake,
    d: &plan::Dataset,
    step: Step,
    done: &[String],
    start: Instant,
) -> Result<Vec<Cell>> {
    let Step { state, upkeep, .. } = step;
    let mut attempts = 0;
    let (mut flushed, mut markers) = (0, 0);
    let auto = upkeep.runs();
    if auto && state.has_flush_work() {
        let step = lake.flush(d, state, "srdp_compact", upkeep.explicit(), done)?;
        (attempts, flushed, markers) = (step.attempts, step.rows, step.markers);
    }
    let (mut processed, mut created, mut reapplied) = (0, 0, 0);
    let mut merged_from = None;
    let mut bounded_calls = None;
    // The flush adds at most one file per partition: the plan's count of small files still
    // tells whether one call would take too many.
    if auto && state.may_merge(flushed > 0) {
        if batched::is_bounded(state.small, step.batch_files) {
            let tiny = lake.tiny_files(d)?;
            let batching = batched::batching(state.mergeable, tiny, step.batch_files, step.target);
            let merged = lake.merge_bounded(d, batching, state.small, upkeep.explicit(), done)?;
            attempts = attempts.max(merged.attempts);
            (processed, created) = (merged.processed, merged.created);
            bounded_calls = Some(merged.calls);
            merged_from = Some((merged.live_before.unwrap_or(state.files), merged.starts));
        } else {
            let (live, starts) = lake.file_row_starts(d)?;
            let merged = lake.merge(d, upkeep.explicit(), done)?;
            attempts = attempts.max(merged.attempts);
            (processed, created) = merged.value;
            merged_from = Some((live, starts));
        }
    }
    // Nobody else committed since the plan: the file count follows from what srdp did, and no
    // delete can have been lost to the merge. Otherwise both are read.
    let files_after = if attempts == 0 {
        state.files
    } else if lake.settle()? {
        merged_from
            .as_ref()
            .map_or(state.files, |(live, _)| live - processed + created)
    } else {
        if let (Some((_, starts)), true) = (&merged_from, processed > 0) {
            reapplied = lake.reapply_lost_deletes(d, starts, done)?;
        }
        lake.files(d)?
    };
    let mut status = planner::compact_status(flushed, markers, processed, upkeep);
    if let Some(calls) = bounded_calls.filter(|&n| n > 0) {
        status.push_str(&format!("; merged in {calls} bounded calls"));
    }
    if reapplied > 0 {
        status.push_str(&format!(
            "; re-applied {reapplied} deletes lost to a concurrent merge (DuckLake 1.0 defect)"
        ));
    }
    Ok(vec![
        flushed.into(),
        state.files.into(),
        files_after.into(),
        processed.into(),
        created.into(),
        i64::from(attempts).into(),
        elapsed_ms(start).into(),
        status.into(),
    ])
}
