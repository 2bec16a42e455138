//! The lost-delete guard: deletes DuckLake 1.0 loses to a concurrent compaction, applied again.

use super::{Lake, StepMode};
use crate::error::{Result, SrdpError};
use crate::plan::{self, Dataset};
use crate::sql::{self, Ident};
use std::collections::BTreeMap;

impl Lake<'_> {
    /// The live data files of `dataset` right before a merge: how many, and the first row id
    /// of each.
    pub fn file_row_starts(&self, dataset: &Dataset) -> Result<(i64, BTreeMap<i64, i64>)> {
        let rows = self.read(&self.meta.live_file_row_starts(dataset.table_id), |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, Option<i64>>(1)?))
        })?;
        let live = i64::try_from(rows.len()).unwrap_or(i64::MAX);
        // DuckLake records no first row id for some files (seen for partitioned tables): their
        // positions cannot be mapped back to row ids, so the guard does not cover them.
        let starts = rows
            .into_iter()
            .filter_map(|(file, start)| start.map(|s| (file, s)))
            .collect();
        Ok((live, starts))
    }

    /// Guard against a DuckLake 1.0 defect: a small delete (stored as inline deletion markers
    /// against Parquet files) that commits while a merge of the same table is in flight is
    /// lost, because the markers keep pointing at the files the merge retired. Merges skip
    /// files that already carry inline deletions, so a marker on a file that was live before
    /// this merge (`starts`) and is not live after it can only be such a lost delete. Merged
    /// files hold row-id-contiguous rows, so the row id is the file's first row id plus the
    /// marker's position. The lost deletes are applied again by row id, in a step of their own.
    /// Returns how many rows were deleted again. Only needed when another connection committed
    /// while srdp worked on the dataset ([`Lake::settle`] says whether one did).
    pub fn reapply_lost_deletes(
        &self,
        dataset: &Dataset,
        starts: &BTreeMap<i64, i64>,
        done: &[String],
    ) -> Result<i64> {
        let markers = match self.read(&self.meta.inline_deletions(dataset.table_id), |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
        }) {
            Ok(markers) => markers,
            // No small delete ever hit this table: the marker table does not exist.
            Err(SrdpError::DuckDb { message, .. }) if message.contains("does not exist") => {
                return Ok(0)
            }
            Err(e) => return Err(e),
        };
        if markers.is_empty() {
            return Ok(0);
        }
        let (_, live) = self.file_row_starts(dataset)?;
        let lost = plan::lost_deletes(&markers, starts, &live);
        if lost.is_empty() {
            return Ok(0);
        }
        let statement = sql::delete_row_ids(
            &Ident::new(&self.spec.alias),
            &Ident::new(&dataset.schema),
            &Ident::new(&dataset.table),
            &lost,
        );
        let deleted = self.step(
            dataset,
            "re-apply lost deletes",
            StepMode::Autocommit,
            &statement,
            done,
            |r| r.get::<_, i64>(0),
        )?;
        Ok(deleted.value)
    }
}
