//! The rewrite step: a dataset's data files that carry deletes, written again without their
//! deleted rows (`ducklake_rewrite_data_files`), so the merge that follows can merge them with
//! their neighbours.
//!
//! Which files: a live file under the target file size that carries any delete, and a file at or
//! above it once its deleted share reaches the threshold: DuckLake's `rewrite_delete_threshold`
//! option (table, schema or catalog) where it is set, else [`DEFAULT_THRESHOLD`]. DuckLake's
//! call takes one threshold for every file of the table, so srdp calls it with the smallest
//! deleted share among the files it wants ([`plan_rewrite`]); where that would also take a large
//! file under the threshold, srdp calls it with the threshold itself and the small files with a
//! smaller share wait (`RewritePlan::waiting`).
//!
//! The step runs after the flush. DuckLake 1.0 can rewrite a file with its inline deletion
//! markers applied, but it leaves the markers behind, and the next flush writes them out as a
//! delete file of the retired file, back-dated, which makes time travel to the snapshots before
//! the rewrite read that file twice (duckdb/ducklake#1406; `test_known_ducklake_defects.py`).
//! The flush first turns every marker into a delete file, so the rewrite meets none; a small
//! delete that lands between srdp's flush and its rewrite is found in the rewrite's transaction,
//! which then stops, and srdp flushes again ([`super::sequence`]).

use super::{Lake, LockUse, Stepped};
use crate::error::{Result, SrdpError};
use crate::plan::{Dataset, OptionScope};
use crate::sql::{self, Literal, MARKERS_ARRIVED};

/// srdp's deleted share at which a file at or above the target file size is rewritten, where
/// DuckLake's `rewrite_delete_threshold` option is not set. Scanning a file carries its deleted
/// rows until it is rewritten; rewriting costs a full read and write of the file (see
/// docs/benchmarks.md, "Rewrite threshold", for the measurement behind the value).
pub const DEFAULT_THRESHOLD: f64 = 0.2;

/// A live data file that carries deletes (a delete file, inline deletion markers, or both).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FileDeletes {
    /// Rows in the file, deleted ones included.
    pub rows: i64,
    pub bytes: u64,
    /// Deleted rows of the file.
    pub deleted: i64,
}

impl FileDeletes {
    /// The deleted share, as DuckLake computes it (deleted rows over the file's rows).
    pub fn share(&self) -> f64 {
        if self.rows > 0 {
            self.deleted as f64 / self.rows as f64
        } else {
            0.0
        }
    }
}

/// What a dataset's rewrite step does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RewritePlan {
    /// The call's `delete_threshold`.
    pub threshold: f64,
    /// Files the call rewrites.
    pub files: i64,
    /// Deleted rows those files carry, which the rewrite leaves out.
    pub deletes: i64,
    /// Files under the target size with deletes that wait for a later call (see the module
    /// documentation).
    pub waiting: i64,
}

/// The rewrite of a dataset whose files with deletes are `files`, for `target` (bytes) and
/// `threshold`; `None` when no file needs it. A plan may rewrite no file and only say that some
/// wait (`files == 0`): the step then calls nothing.
pub fn plan_rewrite(files: &[FileDeletes], target: u64, threshold: f64) -> Option<RewritePlan> {
    let carries = |f: &&FileDeletes| f.deleted > 0 && f.rows > 0;
    let small = |f: &FileDeletes| f.bytes < target;
    let wanted = |f: &FileDeletes| small(f) || f.share() >= threshold;
    let lowest = files
        .iter()
        .filter(carries)
        .filter(|f| wanted(f))
        .map(FileDeletes::share)
        .fold(f64::INFINITY, f64::min);
    if !lowest.is_finite() {
        return None;
    }
    // A large file under the threshold that the lowest share would also take: call with the
    // threshold, and the smaller shares wait.
    let clash = files
        .iter()
        .filter(carries)
        .any(|f| !wanted(f) && f.share() >= lowest);
    let call = if clash { threshold } else { lowest };
    let (mut taken, mut deletes, mut waiting) = (0, 0, 0);
    for f in files.iter().filter(carries) {
        if f.share() >= call {
            taken += 1;
            deletes += f.deleted;
        } else if wanted(f) {
            waiting += 1;
        }
    }
    (taken > 0 || waiting > 0).then_some(RewritePlan {
        threshold: call,
        files: taken,
        deletes,
        waiting,
    })
}

/// The thresholds of a rewrite in bounded calls: DuckLake's rewrite takes every file of the
/// table at or over its threshold in one call (1.0 has no `max_compacted_files` for it), so a
/// table with more than `batch` files to rewrite is rewritten with falling thresholds, each call
/// taking about `batch` files with the highest deleted shares still carrying deletes (the
/// earlier calls' outputs carry none). Files of one share stay in one call. The last threshold is
/// `plan.threshold`, so the calls take every file the plan's one call would.
pub fn batch_thresholds(files: &[FileDeletes], plan: RewritePlan, batch: u64) -> Vec<f64> {
    let mut shares: Vec<f64> = files
        .iter()
        .filter(|f| f.deleted > 0 && f.rows > 0)
        .map(FileDeletes::share)
        .filter(|&share| share >= plan.threshold)
        .collect();
    shares.sort_by(|a, b| b.total_cmp(a));
    let batch = usize::try_from(batch.max(1)).unwrap_or(usize::MAX);
    let mut thresholds = Vec::new();
    let mut taken = 0;
    for (i, share) in shares.iter().enumerate() {
        taken += 1;
        let last_of_share = shares.get(i + 1).is_none_or(|next| next < share);
        if taken >= batch && last_of_share {
            thresholds.push(*share);
            taken = 0;
        }
    }
    if thresholds.last() != Some(&plan.threshold) && (taken > 0 || thresholds.is_empty()) {
        thresholds.push(plan.threshold);
    }
    thresholds
}

/// The threshold for a dataset: DuckLake's `rewrite_delete_threshold` option value where it is
/// set, else [`DEFAULT_THRESHOLD`]; `Err` (the value) when the option is not a share from 0 to
/// 1, which DuckLake's own calls refuse too.
pub fn threshold(option: Option<&str>) -> std::result::Result<f64, String> {
    match option {
        None => Ok(DEFAULT_THRESHOLD),
        Some(text) => text
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| (0.0..=1.0).contains(v))
            .ok_or_else(|| text.to_string()),
    }
}

impl Lake<'_> {
    /// Rewrites one dataset's files with deletes as `plan` says; returns (files processed, files
    /// created), or `None` when inline deletion markers arrived on its live files since srdp's
    /// flush (the caller flushes again first: a rewrite that met them would leave them behind).
    /// One labelled step, bound and executed in one transaction (as the merge: DuckLake plans the
    /// rewrite when the statement is bound), holding a SQLite catalog's write lock until right
    /// before its commit once a step of the call lost its commit. `marker_table`: the table has a
    /// table of markers, which the transaction checks right before the rewrite. A rewrite that
    /// processed files counts as srdp's own commit.
    pub fn rewrite(
        &self,
        dataset: &Dataset,
        plan: RewritePlan,
        marker_table: bool,
        explicit: Option<OptionScope>,
        done: &[String],
    ) -> Result<Option<Stepped<(i64, i64)>>> {
        let statement = sql::rewrite(
            &Literal::new(&self.spec.alias),
            &Literal::new(&dataset.schema),
            &Literal::new(&dataset.table),
            plan.threshold,
        );
        let check = if marker_table {
            self.meta.no_markers_on_live_files(dataset.table_id)
        } else {
            String::new()
        };
        let message = format!("srdp_compact: rewrite {}", dataset.name());
        let step = match self.labelled_step(
            dataset,
            "rewrite",
            &message,
            explicit,
            &check,
            &statement,
            LockUse::HoldUntilCommit,
            done,
            |r| Ok((r.get(0)?, r.get(1)?)),
        ) {
            Ok(step) => step,
            Err(SrdpError::MaintenanceFailed { message, .. })
                if message.contains(MARKERS_ARRIVED) =>
            {
                return Ok(None)
            }
            Err(e) => return Err(e),
        };
        if step.value.0 > 0 {
            self.committed_one();
        }
        Ok(Some(step))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TARGET: u64 = 1000;

    fn file(rows: i64, bytes: u64, deleted: i64) -> FileDeletes {
        FileDeletes {
            rows,
            bytes,
            deleted,
        }
    }

    #[test]
    fn a_small_file_with_any_delete_is_rewritten() {
        let plan = plan_rewrite(&[file(100, 10, 1), file(100, 10, 40)], TARGET, 0.2).unwrap();
        assert_eq!(
            plan,
            RewritePlan {
                threshold: 0.01,
                files: 2,
                deletes: 41,
                waiting: 0
            }
        );
    }

    #[test]
    fn a_large_file_waits_for_the_threshold() {
        assert_eq!(plan_rewrite(&[file(100, 5000, 19)], TARGET, 0.2), None);
        let plan = plan_rewrite(&[file(100, 5000, 20)], TARGET, 0.2).unwrap();
        assert_eq!((plan.threshold, plan.files, plan.deletes), (0.2, 1, 20));
        // The threshold is inclusive, as DuckLake's comparison is.
        let plan = plan_rewrite(&[file(100, 1000, 20)], TARGET, 0.2).unwrap();
        assert_eq!(plan.files, 1);
    }

    #[test]
    fn a_large_file_under_the_threshold_makes_smaller_shares_wait() {
        // The small file's share (0.05) would take the large one (0.1) along: the call uses the
        // threshold, the small file waits.
        let plan = plan_rewrite(&[file(100, 10, 5), file(100, 5000, 10)], TARGET, 0.2);
        assert_eq!(
            plan,
            Some(RewritePlan {
                threshold: 0.2,
                files: 0,
                deletes: 0,
                waiting: 1
            })
        );
        let plan = plan_rewrite(
            &[file(100, 10, 5), file(100, 10, 30), file(100, 5000, 10)],
            TARGET,
            0.2,
        )
        .unwrap();
        assert_eq!(
            plan,
            RewritePlan {
                threshold: 0.2,
                files: 1,
                deletes: 30,
                waiting: 1
            }
        );
        // A large file whose share is under the lowest wanted share does not get in the way.
        let plan = plan_rewrite(&[file(100, 10, 50), file(100, 5000, 10)], TARGET, 0.2).unwrap();
        assert_eq!((plan.threshold, plan.files, plan.waiting), (0.5, 1, 0));
    }

    #[test]
    fn files_without_deletes_or_rows_are_not_planned() {
        assert_eq!(plan_rewrite(&[], TARGET, 0.2), None);
        assert_eq!(
            plan_rewrite(&[file(100, 10, 0), file(0, 10, 0)], TARGET, 0.2),
            None
        );
    }

    #[test]
    fn many_files_are_rewritten_in_falling_thresholds_of_about_a_batch_each() {
        let plan = RewritePlan {
            threshold: 0.01,
            files: 7,
            deletes: 0,
            waiting: 0,
        };
        // Shares 0.5, 0.4, 0.4, 0.3, 0.2, 0.1, 0.01 in batches of 2: the two 0.4s stay together.
        let files: Vec<FileDeletes> = [50, 40, 40, 30, 20, 10, 1, 0]
            .iter()
            .map(|&d| file(100, 10, d))
            .collect();
        assert_eq!(batch_thresholds(&files, plan, 2), vec![0.4, 0.2, 0.01]);
        assert_eq!(batch_thresholds(&files, plan, 3), vec![0.4, 0.1, 0.01]);
        assert_eq!(batch_thresholds(&files, plan, 100), vec![0.01]);
        // One share for all: one call, whatever the batch.
        let same: Vec<FileDeletes> = (0..10).map(|_| file(10, 10, 1)).collect();
        let plan = RewritePlan {
            threshold: 0.1,
            ..plan
        };
        assert_eq!(batch_thresholds(&same, plan, 3), vec![0.1]);
        // A file under the plan's threshold is not counted in.
        let plan = RewritePlan {
            threshold: 0.3,
            ..plan
        };
        assert_eq!(batch_thresholds(&files, plan, 2), vec![0.4, 0.3]);
    }

    #[test]
    fn the_option_is_used_and_a_bad_one_is_refused() {
        assert_eq!(threshold(None), Ok(DEFAULT_THRESHOLD));
        assert_eq!(threshold(Some("0.5")), Ok(0.5));
        assert_eq!(threshold(Some(" 0 ")), Ok(0.0));
        assert_eq!(threshold(Some("1")), Ok(1.0));
        assert_eq!(threshold(Some("1.5")), Err("1.5".to_string()));
        assert_eq!(threshold(Some("lots")), Err("lots".to_string()));
    }
}
