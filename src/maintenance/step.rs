//! How one maintenance step runs: bound and executed in one transaction labelled with srdp's
//! commit author, the `auto_compact` bracket of an explicit step, the SQLite write lock, and
//! srdp's retry policy.

use super::{write_lock, Lake};
use crate::error::{Result, SrdpError};
use crate::plan::{self, Dataset, Failure, OptionScope};
use crate::retry::Jitter;
use crate::sql::{self, Ident, Literal};
use duckdb::Connection;
use std::time::Instant;

/// How a step's statement runs on the runner (see [`run_in_one_transaction`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepMode<'a> {
    /// One autocommit statement.
    Autocommit,
    /// `BEGIN TRANSACTION`, `before` (the `CALL ... set_commit_message` that labels the
    /// snapshot with srdp's author, [`crate::audit::MAINTENANCE_AUTHOR`], and for an explicit
    /// step the `auto_compact = true` at the scope that holds the `false`), the step's statement
    /// bound and executed, `after` (the `auto_compact = false` back, or nothing), `COMMIT`.
    BoundInOneTransaction {
        before: &'a str,
        after: &'a str,
        /// The step flips `auto_compact`: after a failed attempt the catalog is re-attached,
        /// because DuckLake keeps the flipped value in memory after a ROLLBACK.
        flips: bool,
        /// How the step uses a SQLite catalog's write lock once a step of the call lost its
        /// commit ([`write_lock`]).
        lock: LockUse,
    },
}

/// How a step uses a SQLite catalog's write lock after a lost commit ([`write_lock`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockUse {
    /// Held from before the statement until right before its `COMMIT`: a merge writes the
    /// metadata only at its commit.
    HoldUntilCommit,
    /// Held for a moment and released right before the statement: a flush deletes the inlined
    /// rows it wrote out during its statement, which a held lock would refuse. The writers
    /// that met the held lock back off, and the flush runs in the gap they leave.
    ClearBeforeStatement,
}

/// The outcome of a step that may have been retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stepped<T> {
    pub value: T,
    pub attempts: u32,
}

impl Lake<'_> {
    /// Runs one maintenance statement for `dataset` with srdp's retry policy.
    pub fn step<T>(
        &self,
        dataset: &Dataset,
        step: &str,
        mode: StepMode,
        statement: &str,
        done: &[String],
        row: impl Fn(&duckdb::Row) -> duckdb::Result<T>,
    ) -> Result<Stepped<T>> {
        let policy = self.spec.retry;
        let started = Instant::now();
        let mut jitter = Jitter::from_clock();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let outcome = match mode {
                StepMode::BoundInOneTransaction {
                    before,
                    after,
                    lock: use_lock,
                    ..
                } => {
                    let deadline = started + policy.max_retry;
                    let lock = self.write_lock.as_ref().filter(|l| l.wanted());
                    let held = match (lock, use_lock) {
                        (None, _) => Ok(None),
                        (Some(l), LockUse::HoldUntilCommit) => l.take(deadline).map(|()| Some(l)),
                        (Some(l), LockUse::ClearBeforeStatement) => {
                            l.clear_the_way(deadline).map(|()| None)
                        }
                    };
                    held.and_then(|held| {
                        run_in_one_transaction(self.conn, before, statement, after, held, &row)
                            .map_err(|e| e.to_string())
                    })
                }
                StepMode::Autocommit => self
                    .conn
                    .query_row(statement, [], &row)
                    .map_err(|e| e.to_string()),
            };
            if outcome.is_err()
                && matches!(mode, StepMode::BoundInOneTransaction { flips: true, .. })
            {
                crate::runner::reattach(self.conn, self.spec)?;
            }
            let message = match outcome {
                Ok(value) => {
                    return Ok(Stepped {
                        value,
                        attempts: attempt,
                    });
                }
                Err(e) => crate::redact::redact(&e),
            };
            if let Some(lock) = &self.write_lock {
                lock.note_failure(&message);
            }
            let class = plan::classify(&message);
            let wait = (class == Failure::Retryable)
                .then(|| policy.next_wait(attempt, started.elapsed(), jitter.draw()))
                .flatten();
            match class {
                Failure::Retryable if wait.is_some() => {
                    std::thread::sleep(wait.unwrap_or_default());
                }
                Failure::StaleInlinedTable => {
                    return Err(SrdpError::StaleCatalog {
                        catalog: self.spec.catalog.clone(),
                        doing: format!("trying to {step} dataset '{}'", dataset.name()),
                        message,
                        outcome: String::new(),
                    })
                }
                _ => {
                    return Err(SrdpError::MaintenanceFailed {
                        dataset: dataset.name(),
                        step: step.to_string(),
                        attempts: attempt,
                        retried: if attempt > 1 {
                            format!(
                                " Retried for {:.1} s; the budget is max_retry_seconds = {} and max_attempts = {} in srdp.toml.",
                                started.elapsed().as_secs_f64(),
                                policy.max_retry.as_secs(),
                                policy.max_attempts
                            )
                        } else {
                            String::new()
                        },
                        message,
                        done: if done.is_empty() {
                            "none".into()
                        } else {
                            done.join(", ")
                        },
                    })
                }
            }
        }
    }

    /// The `CALL ... set_commit_message` that labels a maintenance step's snapshot with srdp's
    /// author and `message`.
    pub(super) fn label(&self, message: &str) -> String {
        sql::set_commit_message(
            &Ident::new(&self.spec.alias),
            &Literal::new(crate::audit::MAINTENANCE_AUTHOR),
            &Literal::new(message),
        )
    }

    /// A flush, rewrite or merge `statement`, in one transaction bracketed by [`Lake::bracket`],
    /// with srdp's retry policy. `check`: a statement run in the transaction right before
    /// `statement` (after the label), which fails the attempt when the step must not run (empty:
    /// none).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn labelled_step<T>(
        &self,
        dataset: &Dataset,
        step: &str,
        message: &str,
        explicit: Option<OptionScope>,
        check: &str,
        statement: &str,
        lock: LockUse,
        done: &[String],
        row: impl Fn(&duckdb::Row) -> duckdb::Result<T>,
    ) -> Result<Stepped<T>> {
        let (before, after) = self.bracket(message, dataset, explicit);
        let before = if check.is_empty() {
            before
        } else {
            format!("{before}; {check}")
        };
        self.step(
            dataset,
            step,
            StepMode::BoundInOneTransaction {
                before: &before,
                after: &after,
                flips: explicit.is_some(),
                lock,
            },
            statement,
            done,
            row,
        )
    }

    /// What a maintenance step runs before and after its statement, in its transaction: the
    /// commit label; for an explicit step on a dataset DuckLake skips, `auto_compact = true` at
    /// the scope that holds the `false`, and `false` again after the statement. DuckLake 1.0
    /// skips such a dataset even when it is named, with no parameter to force it; set and reset
    /// in one transaction, the option rows of `ducklake_metadata` are exactly as before and the
    /// only new snapshot is the step's (`test_explicit_compaction.py`).
    fn bracket(
        &self,
        message: &str,
        dataset: &Dataset,
        explicit: Option<OptionScope>,
    ) -> (String, String) {
        let label = self.label(message);
        let Some(scope) = explicit else {
            return (label, String::new());
        };
        let set = |value| {
            sql::set_auto_compact(
                &Ident::new(&self.spec.alias),
                value,
                scope,
                &Literal::new(&dataset.schema),
                &Literal::new(&dataset.table),
            )
        };
        (format!("{label}; {}", set(true)), set(false))
    }
}

/// Runs the merge statement so that it is bound and executed in the same transaction.
///
/// duckdb-rs prepares a statement and then executes it; on an autocommit connection those are
/// two transactions. DuckLake 1.0 plans `ducklake_merge_adjacent_files` when the statement is
/// bound, and its commit checks for conflicts only against snapshots newer than the executing
/// transaction, so a merge committed by another process between the two is not seen: both
/// merges commit and the rows of the merged files are duplicated (reproduced with two srdp
/// maintainers on one SQLite catalog, and with `PREPARE`/`EXECUTE` in plain SQL). Inside one
/// explicit transaction the same race fails with DuckLake's "another transaction has compacted
/// it" conflict, which srdp retries. A failed statement or commit leaves no transaction open.
/// Flushes run the same way: bound and executed apart, DuckLake 1.0 commits a flush of inline
/// deletion markers and inlined rows as two snapshots (the plain call makes one). Inside the
/// transaction, a failure of DuckLake's first metadata query (PostgreSQL's missing inlined table)
/// can surface as "Current transaction is aborted"; [`plan::classify`] reads that as the stale
/// catalog it is. Deletes stay autocommit. Each labelled step carries srdp's commit author and
/// message (`label`, run right after `BEGIN`; a step that changes nothing commits no snapshot).
fn run_in_one_transaction<T>(
    conn: &Connection,
    before: &str,
    statement: &str,
    after: &str,
    lock: Option<&write_lock::WriteLock>,
    row: impl FnOnce(&duckdb::Row) -> duckdb::Result<T>,
) -> duckdb::Result<T> {
    if let Err(e) = conn.execute_batch("BEGIN TRANSACTION") {
        if let Some(lock) = lock {
            lock.release();
        }
        return Err(e);
    }
    let outcome = conn
        .execute_batch(before)
        .and_then(|()| conn.query_row(statement, [], row))
        .and_then(|value| {
            if after.is_empty() {
                Ok(value)
            } else {
                conn.execute_batch(after).map(|()| value)
            }
        })
        .and_then(|value| {
            // The lock is released right before the commit, which needs it.
            if let Some(lock) = lock {
                lock.release();
            }
            conn.execute_batch("COMMIT").map(|()| value)
        });
    if let Some(lock) = lock {
        lock.release();
    }
    if outcome.is_err() {
        // A failed statement leaves the transaction open and aborted, a failed COMMIT may too;
        // when there is none, ROLLBACK fails harmlessly ("no transaction is active").
        let _ = conn.execute_batch("ROLLBACK");
    }
    outcome
}
