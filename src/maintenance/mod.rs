//! Dataset maintenance on the runner connection: inlined-row counts, flush, rewrite and merge.
//!
//! The order of a dataset's steps is in [`sequence`]; each step has a file of its own
//! ([`flush`], [`rewrite`], [`merge`] and [`batched`], the lost-delete [`guard`]), all sharing
//! the [`Lake`] handle ([`lake`]: the call's first read, srdp's view of its own commits),
//! [`step`] (how a step runs: one labelled transaction, retried) and the call's [`settings`].
//! [`planner`] is the call's one planning read, [`status`] the result rows' status text.
//!
//! One dataset at a time, in (schema, table) order. Every step commits on its own, so a failure
//! later in the call never undoes an earlier dataset. A step that fails with a retryable error
//! (see [`crate::plan::classify`]) is run again with jittered, doubling waits until its time
//! budget is spent (see [`crate::retry`]); DuckLake re-plans from the current snapshot, so a
//! re-run is safe. srdp only ever re-runs the SQL it wrote itself.

pub mod batched;
mod counts;
mod flush;
pub mod guard;
mod history;
mod lake;
mod merge;
pub mod planner;
pub mod rewrite;
pub mod sequence;
mod settings;
pub mod status;
mod step;
pub mod write_lock;

pub use counts::Inlined;
pub use flush::Flushed;
pub use lake::Lake;
pub use sequence::{Call, Outcome, Steps};
pub use settings::{step_settings, CALLER_SETTINGS, STEP_COMMIT_RETRY};
pub use step::{LockUse, StepMode, Stepped};

use std::time::Instant;

/// Milliseconds since `start`, as a BIGINT.
pub fn elapsed_ms(start: Instant) -> i64 {
    i64::try_from(start.elapsed().as_millis()).unwrap_or(i64::MAX)
}
