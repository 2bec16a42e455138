//! Dataset maintenance on the runner connection: inlined-row counts, flush and compaction.
//!
//! One dataset at a time, in (schema, table) order. Every step is one autocommit statement on
//! the runner, so it commits on its own: a failure later in the call never undoes an earlier
//! dataset. A step that fails with a retryable error (see [`plan::classify`]) is run again with
//! jittered, doubling waits until its time budget is spent (see [`crate::retry`]); DuckLake
//! re-plans from the current snapshot, so a re-run is safe. srdp only ever re-runs the SQL it
//! wrote itself.

pub mod batched;
mod counts;
mod flush;
mod guard;
mod history;
mod lake;
mod merge;
pub mod planner;
mod settings;
mod step;
pub mod write_lock;

pub use counts::Inlined;
pub use flush::Flushed;
pub use lake::Lake;
pub use settings::{step_settings, CALLER_SETTINGS, STEP_COMMIT_RETRY};
pub use step::{LockUse, StepMode, Stepped};

use std::time::Instant;

/// Milliseconds since `start`, as a BIGINT.
pub fn elapsed_ms(start: Instant) -> i64 {
    i64::try_from(start.elapsed().as_millis()).unwrap_or(i64::MAX)
}
