//! The order of a dataset's maintenance steps, in one place. `srdp_flush`, `srdp_compact` and
//! the nightly Dagster job (which calls `srdp_compact`) all run [`Lake::maintain`].
//!
//! A call reads the catalog once ([`super::planner`]), then for each selected dataset, in
//! (schema, table) order, runs only the steps the plan cannot prove idle:
//!
//! 1. **flush** ([`super::flush`]): inlined rows to Parquet, inline deletion markers to delete
//!    files;
//! 2. **rewrite** ([`super::rewrite`], `srdp_compact` only): the files that carry deletes,
//!    written again without their deleted rows (after the flush, so the rewrite never meets an
//!    inline deletion marker);
//! 3. **merge** ([`super::merge`], [`super::batched`], `srdp_compact` only): adjacent small
//!    files, the flush's and the rewrite's outputs among them;
//! 4. **guard** ([`super::guard`]): when another connection committed while srdp worked on the
//!    dataset, the deletes DuckLake 1.0 lost to the rewrite or merge are applied again (and, as
//!    step 0, before everything else, those an earlier call's compaction lost after its guard
//!    had looked).
//!
//! Each step commits on its own, retried by srdp ([`super::step`]); a failure stops the call
//! with an error that names the dataset and the datasets already done, whose steps stay
//! committed. Nothing is expired and no file is deleted.

use super::batched;
use super::guard::LiveFiles;
use super::planner::{CatalogPlan, DatasetState};
use super::rewrite::{self, RewritePlan};
use super::Lake;
use crate::error::Result;
use crate::plan::{self, Dataset, Upkeep};
use std::time::Instant;

/// Which steps a call runs for each dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Steps {
    /// `srdp_flush`: the flush alone.
    Flush,
    /// `srdp_compact`: flush, rewrite, merge; a dataset with more than `batch_files` small files
    /// is merged in bounded calls.
    Compact { batch_files: u64 },
}

/// One maintenance call.
#[derive(Debug, Clone, Copy)]
pub struct Call<'c> {
    /// The SQL function, for commit messages (`srdp_flush: flush raw.t`).
    pub function: &'c str,
    pub steps: Steps,
    /// Plan only: call nothing, report what would be done.
    pub dry_run: bool,
    /// Skip datasets `auto_compact = false` excludes, as DuckLake's bulk calls do.
    pub honor_auto_compact: bool,
}

/// What a rewrite step did (for a dry run: would do).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rewritten {
    /// Data files rewritten.
    pub files: i64,
    /// Files the rewrite wrote.
    pub created: i64,
    /// Deleted rows the rewritten files carried (from the plan), now left out.
    pub deletes: i64,
    /// Small files with deletes the call did not rewrite (see [`super::rewrite`]).
    pub waiting: i64,
    /// Small deletes kept landing before the rewrite: it waits for the next call.
    pub deferred: bool,
}

/// What the merge step did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Merged {
    pub processed: i64,
    pub created: i64,
    /// Calls that merged files, when the merge was bounded.
    pub bounded_calls: Option<u64>,
}

/// What srdp did for one dataset (for a dry run: would do).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    pub upkeep: Upkeep,
    /// A dry run's plan.
    pub planned: bool,
    /// Physical inlined rows written out.
    pub rows_flushed: i64,
    /// Inline deletion markers written to a delete file.
    pub markers_flushed: i64,
    /// Live data files before the steps.
    pub files_before: i64,
    /// Live data files after them (`None` for a dry run).
    pub files_after: Option<i64>,
    pub rewritten: Rewritten,
    pub merged: Merged,
    /// Rows deleted again by the guard.
    pub reapplied: i64,
    /// The most attempts any step needed (0: srdp called nothing).
    pub attempts: u32,
    pub duration_ms: i64,
}

impl Lake<'_> {
    /// One maintenance call over the datasets `schema` and `table` select: one planning read,
    /// then each dataset's steps (or, for a dry run, its plan), in (schema, table) order.
    pub fn maintain(
        &self,
        schema: Option<&str>,
        table: Option<&str>,
        call: &Call,
    ) -> Result<Vec<(Dataset, Outcome)>> {
        let datasets = self.select(schema, table)?;
        let options = self.options()?.to_vec();
        let planned = self.plan(&datasets)?;
        let mut outcomes = Vec::with_capacity(datasets.len());
        let mut done = Vec::new();
        for dataset in datasets {
            let start = Instant::now();
            let upkeep = plan::upkeep(&options, &dataset, call.honor_auto_compact);
            let state = planned.state(dataset.table_id);
            let mut outcome = if call.dry_run {
                plan_only(state, upkeep, call.steps)
            } else {
                self.maintain_dataset(&dataset, state, upkeep, call, &planned, &done)?
            };
            outcome.duration_ms = super::elapsed_ms(start);
            done.push(dataset.name());
            outcomes.push((dataset, outcome));
        }
        if !call.dry_run {
            // One read moves srdp's view past its own commits.
            self.settle_own_commits()?;
        }
        Ok(outcomes)
    }

    /// The steps of one dataset, in their order (see the module documentation).
    fn maintain_dataset(
        &self,
        dataset: &Dataset,
        state: DatasetState,
        upkeep: Upkeep,
        call: &Call,
        planned: &CatalogPlan,
        done: &[String],
    ) -> Result<Outcome> {
        let mut outcome = Outcome {
            upkeep,
            files_before: state.files,
            ..Outcome::default()
        };
        if !upkeep.runs() {
            outcome.files_after = Some(state.files);
            return Ok(outcome);
        }
        let explicit = upkeep.explicit();
        // 0. guard: deletes an earlier compaction lost after its own guard had looked, before the
        // flush writes their markers out.
        if state.markers_on_retired_files {
            outcome.reapplied = self.reapply_lost_deletes(dataset, None, done)?;
        }
        // 1. flush
        if state.has_flush_work() {
            let flushed = self.flush(dataset, state, call.function, explicit, done)?;
            outcome.attempts = flushed.attempts;
            outcome.rows_flushed = flushed.rows;
            outcome.markers_flushed = flushed.markers;
        }
        let Steps::Compact { batch_files } = call.steps else {
            return Ok(outcome);
        };
        // A flush that wrote rows may have written a delete file for its new file too (inlined
        // rows deleted before the flush): the rewrite is planned again for this dataset.
        let state = if state.flush_may_leave_deletes(outcome.rows_flushed) {
            self.replan_rewrite(dataset, state, planned.rewrite_rule(dataset)?)?
        } else {
            state
        };
        // The live files before the merge (the guard's "before": a merge's inputs leave the
        // metadata, a rewrite's stay; a bounded merge adds those before each of its calls), and
        // how many they were (the files after follow from that count).
        let mut before: Option<LiveFiles> = None;
        let mut live_at_merge: Option<i64> = None;
        // 2. rewrite
        if let Some(plan) = state.rewrite {
            outcome.rewritten.waiting = plan.waiting;
            if plan.files > 0 {
                self.rewrite_after_flushes(dataset, state, plan, call, done, &mut outcome)?;
            }
        }
        // 3. merge. The flush adds at most one file per partition: the plan's count of small
        // files still tells whether one call would take too many.
        let new_files = outcome.rows_flushed > 0 || outcome.rewritten.created > 0;
        if state.may_merge(new_files) {
            if batched::is_bounded(state.small, batch_files) {
                let tiny = self.tiny_files(dataset)?;
                let batching =
                    batched::batching(state.mergeable, tiny, batch_files, planned.target());
                let merged = self.merge_bounded(dataset, batching, state.small, explicit, done)?;
                outcome.attempts = outcome.attempts.max(merged.attempts);
                outcome.merged = Merged {
                    processed: merged.processed,
                    created: merged.created,
                    bounded_calls: Some(merged.calls),
                };
                live_at_merge = merged.live_before;
                before = Some(merged.before);
            } else {
                let live = self.live_files(dataset)?;
                live_at_merge = Some(live.count());
                before = Some(live);
                let merged = self.merge(dataset, explicit, done)?;
                outcome.attempts = outcome.attempts.max(merged.attempts);
                (outcome.merged.processed, outcome.merged.created) = merged.value;
            }
        }
        // 4. guard. Nobody else committed since the plan: the file count follows from what srdp
        // did (read once when only a rewrite ran), and no delete can have been lost. Otherwise
        // both are read.
        let compacted = outcome.rewritten.files + outcome.merged.processed > 0;
        outcome.files_after = Some(if outcome.attempts == 0 {
            state.files
        } else if self.settle()? {
            match live_at_merge {
                Some(live) => live - outcome.merged.processed + outcome.merged.created,
                None if outcome.rewritten.files > 0 => self.files(dataset)?,
                None => state.files,
            }
        } else {
            if compacted {
                outcome.reapplied += self.reapply_lost_deletes(dataset, before.as_ref(), done)?;
            }
            self.files(dataset)?
        });
        Ok(outcome)
    }
}

impl Lake<'_> {
    /// The rewrite step: one call, or for more than `batch_files` files to rewrite, calls with
    /// falling thresholds of about `batch_files` files each ([`super::rewrite::batch_thresholds`])
    /// with DuckDB's external file cache off. Before each call srdp flushes again each time small
    /// deletes landed since the last flush (see [`Lake::rewrite`]), at most [`REWRITE_TRIES`]
    /// times; after that the rest of the rewrite waits for the next call.
    fn rewrite_after_flushes(
        &self,
        dataset: &Dataset,
        state: DatasetState,
        plan: RewritePlan,
        call: &Call,
        done: &[String],
        outcome: &mut Outcome,
    ) -> Result<()> {
        let Steps::Compact { batch_files } = call.steps else {
            return Ok(());
        };
        if u64::try_from(plan.files).unwrap_or(0) <= batch_files {
            return self.rewrite_call(dataset, state, plan, call, done, outcome);
        }
        let files = self.files_with_deletes(dataset, state)?;
        let thresholds = rewrite::batch_thresholds(&files, plan, batch_files);
        self.without_file_cache(|| {
            for threshold in thresholds {
                let step = RewritePlan { threshold, ..plan };
                self.rewrite_call(dataset, state, step, call, done, outcome)?;
                if outcome.rewritten.deferred {
                    break;
                }
            }
            Ok(())
        })?;
        if outcome.rewritten.files > 0 {
            outcome.rewritten.deletes = plan.deletes;
        }
        Ok(())
    }

    /// One rewrite call, after as many flushes as small deletes need (see
    /// [`Lake::rewrite_after_flushes`]); adds what it did to `outcome`.
    fn rewrite_call(
        &self,
        dataset: &Dataset,
        state: DatasetState,
        plan: RewritePlan,
        call: &Call,
        done: &[String],
        outcome: &mut Outcome,
    ) -> Result<()> {
        let explicit = outcome.upkeep.explicit();
        for _ in 0..REWRITE_TRIES {
            if let Some(step) = self.rewrite(dataset, plan, state.marker_table, explicit, done)? {
                outcome.attempts = outcome.attempts.max(step.attempts);
                let (files, created) = step.value;
                outcome.rewritten.files += files;
                outcome.rewritten.created += created;
                if files > 0 {
                    outcome.rewritten.deletes = plan.deletes;
                }
                return Ok(());
            }
            let again = DatasetState {
                markers_unknown: true,
                ..state
            };
            let flushed = self.flush(dataset, again, call.function, explicit, done)?;
            outcome.attempts = outcome.attempts.max(flushed.attempts);
            outcome.rows_flushed += flushed.rows;
        }
        outcome.rewritten.deferred = true;
        Ok(())
    }
}

/// How often a call flushes again for small deletes that land before its rewrite.
pub const REWRITE_TRIES: u32 = 3;

/// What a dry run reports for a dataset: the rows a flush would write, the files a rewrite would
/// take; nothing is called.
fn plan_only(state: DatasetState, upkeep: Upkeep, steps: Steps) -> Outcome {
    let runs = upkeep.runs();
    let mut outcome = Outcome {
        upkeep,
        planned: true,
        rows_flushed: if runs { state.inlined_rows } else { 0 },
        files_before: state.files,
        ..Outcome::default()
    };
    if let (true, Steps::Compact { .. }, Some(plan)) = (runs, steps, state.rewrite) {
        outcome.rewritten = Rewritten {
            files: plan.files,
            created: 0,
            deletes: plan.deletes,
            waiting: plan.waiting,
            deferred: false,
        };
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dry_run_reports_the_planned_flush_and_rewrite() {
        let state = DatasetState {
            files: 21,
            inlined_rows: 7,
            rewrite: Some(RewritePlan {
                threshold: 0.01,
                files: 19,
                deletes: 120126,
                waiting: 0,
            }),
            ..DatasetState::default()
        };
        let compact = plan_only(state, Upkeep::Maintained, Steps::Compact { batch_files: 2 });
        assert_eq!(
            (
                compact.rows_flushed,
                compact.files_before,
                compact.rewritten
            ),
            (
                7,
                21,
                Rewritten {
                    files: 19,
                    created: 0,
                    deletes: 120126,
                    waiting: 0,
                    deferred: false
                }
            )
        );
        assert!(compact.planned && compact.files_after.is_none());
        let flush = plan_only(state, Upkeep::Maintained, Steps::Flush);
        assert_eq!(flush.rewritten, Rewritten::default());
        let skipped = plan_only(state, Upkeep::Skipped, Steps::Compact { batch_files: 2 });
        assert_eq!((skipped.rows_flushed, skipped.rewritten.files), (0, 0));
    }
}
