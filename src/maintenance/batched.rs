//! Bounded merges: a dataset with very many small files is merged in calls of at most
//! `merge_batch_files` input files each, so the merge's memory does not grow with the file count.
//!
//! One `ducklake_merge_adjacent_files` call over N small files holds per-file scan state, the
//! batches of its order-preserving copy and a commit whose statements list every file, all
//! proportional to N, and DuckDB's external file cache keeps about 12.5 KB of every file it read
//! until the process ends (docs/research/merge-memory.md: 862 MB for 30,000 files of 600 B).
//! srdp instead runs, with the cache off for the duration:
//!
//! 1. stage 1, the tiny files (under [`TINY_BYTES`]): `ducklake_target_file_size` set for srdp's
//!    connection to about `merge_batch_files` times their average size, and
//!    `max_compacted_files => commands, max_file_size => below`, repeated until a call processes
//!    nothing; `max_file_size` keeps each stage's outputs out of its next call;
//! 2. stage 2, everything under the caller's target size, with the caller's settings back and
//!    `max_compacted_files => commands`, repeated until a call processes nothing.
//!
//! Each call is one labelled step of its own (one snapshot, retried), like srdp's single merge.
//! The last call of stage 2 found nothing to merge under the caller's settings, so the plain
//! `ducklake_merge_adjacent_files` afterwards does nothing either; rows, row ids and time travel
//! are DuckLake's own. The layout can differ from one unbounded call's when the small files add
//! up to more than the target size (stage 2 packs stage 1's outputs, not the original files).

use super::guard::LiveFiles;
use super::{Lake, LockUse, Stepped};
use crate::error::{Result, SrdpError};
use crate::plan::{Dataset, OptionScope};
use crate::sql::{self, Ident, Literal};

/// `merge_batch_files` when the caller gives none and DuckDB runs several threads: about the most
/// input files one merge call takes. The order-preserving copy of a merge buffers tiny batches
/// with more than one thread and its cost grows faster than the batch; at 30,000 files of 600 B
/// on 2 threads, 1,000 / 2,000 / 4,000 files per call took 9.6 / 8.6 / 10.6 s (measured once
/// when this default was chosen, e1eb169; `bench/bench.py` has no batch-size option and runs the
/// default only: docs/benchmarks.md, Many small files).
pub const DEFAULT_BATCH_FILES: u64 = 2000;

/// The default with one DuckDB thread, whose copy is linear: 2,000 / 5,000 files per call took
/// 7.8 / 4.8 s at 30,000 files, at about the same peak RSS.
pub const ONE_THREAD_BATCH_FILES: u64 = 5000;

/// The default `merge_batch_files` for DuckDB's `threads` setting (`None`: unknown).
pub fn default_batch_files(threads: Option<u64>) -> u64 {
    if threads == Some(1) {
        ONE_THREAD_BATCH_FILES
    } else {
        DEFAULT_BATCH_FILES
    }
}

/// Files under this size are stage 1's ("tiny"): many of them fit in one batch.
pub const TINY_BYTES: u64 = 1 << 20;

/// How a bounded merge of one dataset runs (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batching {
    /// Stage 1's target file size in bytes; `None`: no stage 1 (fewer than two tiny files).
    pub stage_target: Option<u64>,
    /// Stage 1's `max_file_size`: inputs under this many bytes.
    pub below: u64,
    /// `max_compacted_files` of every call.
    pub commands: u64,
}

/// Whether a dataset with `small` files under the target size is merged in bounded calls: one
/// call would take more than `batch_files` of them.
pub fn is_bounded(small: i64, batch_files: u64) -> bool {
    u64::try_from(small).is_ok_and(|small| small > batch_files)
}

/// How a bounded merge runs for a dataset with at most `largest_group` small files in one
/// partition. `tiny`: the number and total bytes of its files under [`TINY_BYTES`]; `target`:
/// the target file size in bytes.
pub fn batching(largest_group: i64, tiny: (i64, i64), batch_files: u64, target: u64) -> Batching {
    let group = u64::try_from(largest_group)
        .unwrap_or(1)
        .clamp(1, batch_files);
    let commands = (batch_files / group).max(1);
    let (count, bytes) = (
        u64::try_from(tiny.0).unwrap_or(0),
        u64::try_from(tiny.1).unwrap_or(0),
    );
    if count < 2 {
        return Batching {
            stage_target: None,
            below: 0,
            commands,
        };
    }
    let average = (bytes / count).max(1);
    let stage_target = average.saturating_mul(batch_files).min(target).max(1);
    // The outputs of one call are compressed together and may be a few times smaller than their
    // inputs; `below` stays well under them (and over the tiny files) so no call re-merges them.
    let below = (stage_target / 16)
        .min(TINY_BYTES)
        .max(average.saturating_mul(2) + 1);
    Batching {
        stage_target: Some(stage_target),
        below,
        commands,
    }
}

/// The most calls one stage makes: each call that processes files merges at least two into
/// one, so `small` files need fewer; the cap only stops a merge that makes no progress.
fn call_cap(small: i64) -> u64 {
    u64::try_from(small).unwrap_or(0).saturating_mul(2) + 16
}

/// What a bounded merge did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Merged {
    pub processed: i64,
    pub created: i64,
    pub attempts: u32,
    /// Calls that processed files.
    pub calls: u64,
    /// Every file that was live before one of the calls (for the lost-delete guard).
    pub before: LiveFiles,
    /// The live files before the first call (`None` until it runs).
    pub live_before: Option<i64>,
}

impl Lake<'_> {
    /// The number and total bytes of `dataset`'s live files under [`TINY_BYTES`].
    pub fn tiny_files(&self, dataset: &Dataset) -> Result<(i64, i64)> {
        let rows = self.read(
            &self.meta.small_files_of(dataset.table_id, TINY_BYTES),
            |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
        )?;
        Ok(rows.first().copied().unwrap_or((0, 0)))
    }

    /// Merges `dataset` in bounded calls (see the module documentation), with DuckDB's external
    /// file cache off while it runs (a global setting: srdp turns it back on afterwards, also
    /// after an error, when it was on).
    pub fn merge_bounded(
        &self,
        dataset: &Dataset,
        batching: Batching,
        small: i64,
        explicit: Option<OptionScope>,
        done: &[String],
    ) -> Result<Merged> {
        self.without_file_cache(|| {
            let outcome = self.merge_stages(dataset, batching, small, explicit, done);
            let restored = self.use_caller_target();
            let merged = outcome?;
            restored?;
            Ok(merged)
        })
    }

    fn merge_stages(
        &self,
        dataset: &Dataset,
        batching: Batching,
        small: i64,
        explicit: Option<OptionScope>,
        done: &[String],
    ) -> Result<Merged> {
        let mut merged = Merged::default();
        if let Some(stage_target) = batching.stage_target {
            let setting = sql::session_setting(
                &Ident::new("ducklake_target_file_size"),
                Some(&Literal::new(&format!("{stage_target}B"))),
            );
            self.conn.execute_batch(&setting).map_err(|e| {
                SrdpError::duckdb(
                    format!(
                        "setting srdp's stage-1 target file size for dataset '{}' failed",
                        dataset.name()
                    ),
                    e,
                )
            })?;
            self.merge_calls(
                dataset,
                batching.commands,
                Some(batching.below),
                small,
                explicit,
                done,
                &mut merged,
            )?;
            self.use_caller_target()?;
        }
        self.merge_calls(
            dataset,
            batching.commands,
            None,
            small,
            explicit,
            done,
            &mut merged,
        )?;
        Ok(merged)
    }

    /// Merge calls until one processes nothing.
    #[allow(clippy::too_many_arguments)]
    fn merge_calls(
        &self,
        dataset: &Dataset,
        commands: u64,
        below: Option<u64>,
        small: i64,
        explicit: Option<OptionScope>,
        done: &[String],
        merged: &mut Merged,
    ) -> Result<()> {
        let statement = sql::merge_batch(
            &Literal::new(&self.spec.alias),
            &Literal::new(&dataset.schema),
            &Literal::new(&dataset.table),
            commands,
            below,
        );
        for _ in 0..call_cap(small) {
            let live = self.live_files(dataset)?;
            merged.live_before.get_or_insert(live.count());
            merged.before.extend(live);
            let message = format!(
                "srdp_compact: merge {} (bounded call {})",
                dataset.name(),
                merged.calls + 1
            );
            let step: Stepped<(i64, i64)> = self.labelled_step(
                dataset,
                "merge",
                &message,
                explicit,
                "",
                &statement,
                LockUse::HoldUntilCommit,
                done,
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            merged.attempts = merged.attempts.max(step.attempts);
            let (processed, created) = step.value;
            if processed == 0 {
                return Ok(());
            }
            self.committed_one();
            merged.calls += 1;
            merged.processed += processed;
            merged.created += created;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TARGET: u64 = 512 << 20;

    #[test]
    fn few_small_files_merge_in_one_call() {
        assert!(!is_bounded(2000, 2000));
        assert!(!is_bounded(0, 2000));
        assert!(!is_bounded(-1, 2000));
        assert!(is_bounded(2001, 2000));
    }

    #[test]
    fn many_tiny_files_merge_in_two_stages() {
        // 30,000 files of 600 B in one partition: ~2,000 per call, outputs far over `below`.
        assert_eq!(
            batching(30_000, (30_000, 18_000_000), 2000, TARGET),
            Batching {
                stage_target: Some(1_200_000),
                below: 75_000,
                commands: 1,
            }
        );
        // Spread over partitions of 40 files: 50 commands of one partition each per call.
        assert_eq!(
            batching(40, (30_000, 18_000_000), 2000, TARGET).commands,
            50
        );
    }

    #[test]
    fn stage_one_never_exceeds_the_target_nor_leaves_tiny_files_behind() {
        let b = batching(10_000, (10_000, 9_000_000_000), 2000, TARGET);
        assert_eq!(b.stage_target, Some(TARGET));
        assert_eq!(b.below, TINY_BYTES.max(2 * 900_000 + 1));
        // Tiny files of 1 byte: the threshold still covers them.
        let b = batching(5000, (5000, 5000), 2000, TARGET);
        assert_eq!((b.stage_target, b.below), (Some(2000), 125));
    }

    #[test]
    fn no_tiny_files_means_stage_two_only() {
        assert_eq!(
            batching(5000, (1, 10), 2000, TARGET),
            Batching {
                stage_target: None,
                below: 0,
                commands: 1,
            }
        );
    }

    #[test]
    fn one_thread_takes_larger_batches() {
        assert_eq!(default_batch_files(Some(1)), 5000);
        assert_eq!(default_batch_files(Some(2)), 2000);
        assert_eq!(default_batch_files(None), 2000);
    }

    #[test]
    fn the_call_cap_covers_every_file() {
        assert_eq!(call_cap(30_000), 60_016);
        assert_eq!(call_cap(-1), 16);
    }
}
