//! The flush step: a dataset's inlined rows and inline deletion markers written out to Parquet.

use super::{planner, Lake, LockUse};
use crate::error::Result;
use crate::plan::{Dataset, OptionScope};
use crate::sql::{self, Literal};

/// What a flush step did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flushed {
    /// Physical inlined rows written out.
    pub rows: i64,
    /// Inline deletion markers written to a delete file.
    pub markers: i64,
    pub attempts: u32,
}

impl Lake<'_> {
    /// Flushes one dataset's inlined rows (and inline deletion markers, which `state` counted).
    ///
    /// Bound and executed in one transaction labelled `<caller>: flush <dataset>`: on an
    /// autocommit connection duckdb-rs binds and executes in two transactions, and DuckLake 1.0
    /// then commits a flush of both inline deletion markers and inlined rows as two snapshots
    /// where the plain call makes one (`test_maintenance_planner.py` compares them).
    /// `explicit`: the scope of the `auto_compact = false` this step overrides (see
    /// [`Lake::bracket`]). A flush that wrote rows or markers counts as srdp's own commit.
    pub fn flush(
        &self,
        dataset: &Dataset,
        state: planner::DatasetState,
        caller: &str,
        explicit: Option<OptionScope>,
        done: &[String],
    ) -> Result<Flushed> {
        let statement = sql::flush(
            &Literal::new(&self.spec.alias),
            &Literal::new(&dataset.schema),
            &Literal::new(&dataset.table),
        );
        let message = format!("{caller}: flush {}", dataset.name());
        let step = self.labelled_step(
            dataset,
            "flush",
            &message,
            explicit,
            "",
            &statement,
            LockUse::ClearBeforeStatement,
            done,
            |r| r.get(0),
        )?;
        let markers = self.markers_flushed(dataset.table_id, state)?;
        if step.value > 0 || markers > 0 {
            self.committed_one();
        }
        Ok(Flushed {
            rows: step.value,
            markers,
            attempts: step.attempts,
        })
    }

    /// Markers a flush of `state`'s dataset wrote to a delete file: how many were counted before
    /// minus how many are left (0 when either count is unknown).
    fn markers_flushed(&self, table_id: i64, state: planner::DatasetState) -> Result<i64> {
        if state.inline_deletions == 0 || state.markers_unknown {
            return Ok(0);
        }
        Ok(self
            .inline_deletions_of(table_id)?
            .map_or(0, |left| (state.inline_deletions - left).max(0)))
    }
}
