//! `srdp_retry_wait(catalog, message, attempt :=, elapsed_ms :=)`: srdp's retry decision for a
//! failed write that srdp did not run itself (the Dagster IO manager's transactions), so every
//! write path retries the same errors on the same budget as maintenance.
//!
//! Parameters: `catalog` (its `max_retry_seconds`, `max_attempts` and `retry_backoff_ms`
//! apply), `message` (the DuckDB error text), `attempt :=` (the attempt that failed, 1-based),
//! `elapsed_ms :=` (milliseconds since the first attempt started), `config :=`.
//! Returns one row: `retry BOOLEAN`, `wait_ms BIGINT` (jittered; 0 when not retrying),
//! `failure` (`retryable`, `stale inlined table` or `fatal`), `max_attempts BIGINT`,
//! `max_retry_seconds BIGINT`.
//! Errors: unknown catalog; a missing, NULL or negative `attempt` / `elapsed_ms`.
//!
//! ```sql
//! SELECT retry, wait_ms FROM srdp_retry_wait('lake', 'database is locked', attempt := 1, elapsed_ms := 40);
//! ```

use super::{Args, Cell, Column, Shared, SrdpFunction};
use crate::error::{Result, SrdpError};
use crate::plan::{self, Failure};
use crate::retry::Jitter;
use duckdb::core::{LogicalTypeHandle, LogicalTypeId};
use std::time::Duration;

pub struct RetryWait;

fn required_count(args: &Args, name: &str) -> Result<u64> {
    match args.bigint(name)? {
        None => Err(SrdpError::InvalidArgument(format!(
            "{name} := is required; pass the failed attempt's {name}"
        ))),
        Some(v) if v < 0 => Err(SrdpError::InvalidArgument(format!(
            "{name} := must not be negative, got {v}"
        ))),
        Some(v) => Ok(v as u64),
    }
}

impl SrdpFunction for RetryWait {
    type Bound = Vec<Vec<Cell>>;
    const NAME: &'static str = "srdp_retry_wait";

    fn positional() -> &'static [&'static str] {
        &["catalog", "message"]
    }

    fn named() -> Vec<(&'static str, LogicalTypeHandle)> {
        ["attempt", "elapsed_ms"]
            .into_iter()
            .map(|n| (n, LogicalTypeHandle::from(LogicalTypeId::Bigint)))
            .collect()
    }

    fn columns() -> Vec<Column> {
        vec![
            Column::boolean("retry"),
            Column::bigint("wait_ms"),
            Column::text("failure"),
            Column::bigint("max_attempts"),
            Column::bigint("max_retry_seconds"),
        ]
    }

    fn bind(args: &Args) -> Result<Self::Bound> {
        let catalog = args.required_text(0)?;
        let message = args.required_text(1)?;
        let attempt = required_count(args, "attempt")?;
        let elapsed = Duration::from_millis(required_count(args, "elapsed_ms")?);
        let config = args.config()?;
        let policy = config.catalog(&catalog)?.tunables.retry();
        let failure = plan::classify(&message);
        let wait = match failure {
            Failure::Retryable => policy.next_wait(
                u32::try_from(attempt).unwrap_or(u32::MAX),
                elapsed,
                Jitter::from_clock().draw(),
            ),
            _ => None,
        };
        let name = match failure {
            Failure::Retryable => "retryable",
            Failure::StaleInlinedTable => "stale inlined table",
            Failure::Fatal => "fatal",
        };
        Ok(vec![vec![
            wait.is_some().into(),
            i64::try_from(wait.unwrap_or_default().as_millis())
                .unwrap_or(i64::MAX)
                .into(),
            name.into(),
            i64::from(policy.max_attempts).into(),
            i64::try_from(policy.max_retry.as_secs())
                .unwrap_or(i64::MAX)
                .into(),
        ]])
    }

    fn run(rows: &Self::Bound, _shared: &Shared) -> Result<Vec<Vec<Cell>>> {
        Ok(rows.clone())
    }
}
