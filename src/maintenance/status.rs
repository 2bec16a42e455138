//! The `status` text of a maintenance result row, from what srdp did for the dataset
//! ([`Outcome`]): a base word (`flushed`, `compacted`, `nothing to do`, `planned`,
//! `skipped: auto_compact is false`), then notes for what a reader would otherwise not see, in
//! this order: inline deletion markers written, files rewritten, small files whose rewrite
//! waits, a deferred rewrite, an explicit step, bounded merge calls, deletes re-applied after a
//! race.

use super::sequence::{Outcome, Steps};
use crate::plan;

/// Appended to the status of a step that overrode `auto_compact = false` (see
/// [`crate::plan::Upkeep::Explicit`]).
pub const EXPLICIT_NOTE: &str = "; explicit: auto_compact is false for bulk calls only";

/// Appended when small deletes kept landing before the rewrite (see
/// [`super::sequence::REWRITE_TRIES`]).
pub const DEFERRED_NOTE: &str =
    "; rewrite deferred to the next call: small deletes kept landing before it";

/// `s` from 2 on (and for 0).
fn plural(n: i64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// `1 inline deletion marker written to a delete file` (plural from 2 on).
pub fn markers_note(markers: i64) -> String {
    format!(
        "{markers} inline deletion marker{} written to a delete file",
        plural(markers)
    )
}

/// `2 files with deletes rewritten (40 deleted rows left out)`.
pub fn rewrite_note(files: i64, deletes: i64) -> String {
    format!(
        "{files} file{} with deletes rewritten ({deletes} deleted row{} left out)",
        plural(files),
        plural(deletes)
    )
}

/// Why small files with deletes were not rewritten (see [`super::rewrite`]).
pub fn waiting_note(files: i64) -> String {
    format!(
        "{files} small file{} with deletes not rewritten: the call would also rewrite a file at \
         or above the target size whose deleted share is under the rewrite threshold",
        plural(files)
    )
}

impl Outcome {
    /// The status of this outcome of a call that runs `steps`.
    pub fn status(&self, steps: &Steps) -> String {
        let runs = self.upkeep.runs();
        if self.planned {
            return plan::planned_status(runs).to_string();
        }
        let flushed = self.rows_flushed + self.markers_flushed;
        let (mut status, changed) = match steps {
            Steps::Flush => (plan::flush_status(flushed, runs).to_string(), flushed > 0),
            Steps::Compact { .. } => {
                let changed = flushed + self.rewritten.files + self.merged.processed;
                (
                    plan::compact_status(
                        flushed + self.rewritten.files,
                        self.merged.processed,
                        runs,
                    )
                    .to_string(),
                    changed > 0,
                )
            }
        };
        if self.markers_flushed > 0 {
            status.push_str(&format!("; {}", markers_note(self.markers_flushed)));
        }
        if self.rewritten.files > 0 {
            status.push_str(&format!(
                "; {}",
                rewrite_note(self.rewritten.files, self.rewritten.deletes)
            ));
        }
        if self.rewritten.waiting > 0 {
            status.push_str(&format!("; {}", waiting_note(self.rewritten.waiting)));
        }
        if self.rewritten.deferred {
            status.push_str(DEFERRED_NOTE);
        }
        if changed && self.upkeep.explicit().is_some() {
            status.push_str(EXPLICIT_NOTE);
        }
        if let Some(calls) = self.merged.bounded_calls.filter(|&n| n > 0) {
            let plural = if calls == 1 { "" } else { "s" };
            status.push_str(&format!("; merged in {calls} bounded call{plural}"));
        }
        if self.reapplied > 0 {
            status.push_str(&format!(
                "; re-applied {} deletes lost to a concurrent compaction (DuckLake 1.0 defect)",
                self.reapplied
            ));
        }
        status
    }
}

#[cfg(test)]
mod tests {
    use super::super::sequence::{Merged, Rewritten};
    use super::*;
    use crate::plan::{OptionScope, Upkeep};

    const COMPACT: Steps = Steps::Compact { batch_files: 2000 };

    fn compacted(rows: i64, markers: i64, processed: i64, upkeep: Upkeep) -> String {
        Outcome {
            upkeep,
            rows_flushed: rows,
            markers_flushed: markers,
            merged: Merged {
                processed,
                ..Merged::default()
            },
            ..Outcome::default()
        }
        .status(&COMPACT)
    }

    fn flushed(rows: i64, markers: i64, upkeep: Upkeep) -> String {
        Outcome {
            upkeep,
            rows_flushed: rows,
            markers_flushed: markers,
            ..Outcome::default()
        }
        .status(&Steps::Flush)
    }

    #[test]
    fn statuses_say_what_happened() {
        let on = Upkeep::Maintained;
        assert_eq!(compacted(0, 0, 0, on), "nothing to do");
        assert_eq!(compacted(5, 0, 0, on), "compacted");
        assert_eq!(
            compacted(0, 3, 0, on),
            "compacted; 3 inline deletion markers written to a delete file"
        );
        assert_eq!(
            compacted(2, 1, 0, on),
            "compacted; 1 inline deletion marker written to a delete file"
        );
        assert_eq!(
            compacted(0, 0, 0, Upkeep::Skipped),
            "skipped: auto_compact is false"
        );
        let explicit = Upkeep::Explicit(OptionScope::Schema);
        assert_eq!(
            compacted(0, 1, 4, explicit),
            "compacted; 1 inline deletion marker written to a delete file; explicit: auto_compact is false for bulk calls only"
        );
        assert_eq!(compacted(0, 0, 0, explicit), "nothing to do");
        assert_eq!(flushed(4, 0, on), "flushed");
        assert_eq!(
            flushed(4, 0, explicit),
            "flushed; explicit: auto_compact is false for bulk calls only"
        );
        assert_eq!(
            flushed(0, 2, on),
            "flushed; 2 inline deletion markers written to a delete file"
        );
        assert_eq!(flushed(0, 0, explicit), "nothing to do");
        assert_eq!(
            flushed(0, 0, Upkeep::Skipped),
            "skipped: auto_compact is false"
        );
    }

    #[test]
    fn a_rewrite_and_what_it_left_are_named() {
        let outcome = Outcome {
            markers_flushed: 19525,
            rewritten: Rewritten {
                files: 19,
                created: 1,
                deletes: 120126,
                ..Rewritten::default()
            },
            merged: Merged {
                processed: 3,
                created: 1,
                bounded_calls: None,
            },
            ..Outcome::default()
        };
        assert_eq!(
            outcome.status(&COMPACT),
            "compacted; 19525 inline deletion markers written to a delete file; \
             19 files with deletes rewritten (120126 deleted rows left out)"
        );
        let one = Outcome {
            rewritten: Rewritten {
                files: 1,
                created: 1,
                deletes: 1,
                waiting: 2,
                deferred: false,
            },
            reapplied: 3,
            upkeep: Upkeep::Explicit(OptionScope::Table),
            ..Outcome::default()
        };
        assert_eq!(
            one.status(&COMPACT),
            "compacted; 1 file with deletes rewritten (1 deleted row left out); \
             2 small files with deletes not rewritten: the call would also rewrite a file at or \
             above the target size whose deleted share is under the rewrite threshold; \
             explicit: auto_compact is false for bulk calls only; \
             re-applied 3 deletes lost to a concurrent compaction (DuckLake 1.0 defect)"
        );
        let deferred = Outcome {
            markers_flushed: 2,
            rewritten: Rewritten {
                deferred: true,
                ..Rewritten::default()
            },
            ..Outcome::default()
        };
        assert_eq!(
            deferred.status(&COMPACT),
            "compacted; 2 inline deletion markers written to a delete file; \
             rewrite deferred to the next call: small deletes kept landing before it"
        );
        let waiting_only = Outcome {
            rewritten: Rewritten {
                waiting: 1,
                ..Rewritten::default()
            },
            ..Outcome::default()
        };
        assert_eq!(
            waiting_only.status(&COMPACT),
            "nothing to do; 1 small file with deletes not rewritten: the call would also rewrite \
             a file at or above the target size whose deleted share is under the rewrite threshold"
        );
    }

    #[test]
    fn bounded_merges_and_plans_are_named() {
        let bounded = Outcome {
            merged: Merged {
                processed: 30000,
                created: 15,
                bounded_calls: Some(16),
            },
            ..Outcome::default()
        };
        assert_eq!(
            bounded.status(&COMPACT),
            "compacted; merged in 16 bounded calls"
        );
        let once = Outcome {
            merged: Merged {
                processed: 2500,
                created: 2,
                bounded_calls: Some(1),
            },
            ..Outcome::default()
        };
        assert_eq!(once.status(&COMPACT), "compacted; merged in 1 bounded call");
        let planned = Outcome {
            planned: true,
            rows_flushed: 4,
            ..Outcome::default()
        };
        assert_eq!(planned.status(&COMPACT), "planned");
        let skipped = Outcome {
            planned: true,
            upkeep: Upkeep::Skipped,
            ..Outcome::default()
        };
        assert_eq!(
            skipped.status(&Steps::Flush),
            "skipped: auto_compact is false"
        );
    }
}
