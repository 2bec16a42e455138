//! One read of the catalog for a maintenance call: what every selected dataset holds, in a
//! constant number of metadata queries per call (not per dataset), so srdp can skip the DuckLake
//! calls that provably do nothing.
//!
//! * flush: a dataset with no inlined insertion records and no inline deletion markers has
//!   nothing to flush;
//! * merge: DuckLake 1.0 merges only live files under the target file size that share a
//!   partition (and a schema version, and carry no deletes), two or more at a time. srdp groups
//!   by partition alone and counts files with deletes, which can only make its groups larger, and
//!   takes the largest target size anyone configured (the catalog's options at any scope, the
//!   `ducklake_target_file_size` setting, DuckLake's default 512 MiB): fewer than two such files
//!   in every group proves there is nothing to merge. A dataset that was just flushed has new
//!   files, so it is always merged. When the plan cannot prove it, DuckLake is called.

use super::Lake;
use crate::error::Result;
use crate::plan::{self, Dataset, Upkeep};
use std::collections::{BTreeMap, BTreeSet};

/// Up to this many selected datasets, the planning read names their table ids.
const FEW_DATASETS: usize = 64;

/// DuckLake 1.0's default `target_file_size` (`DuckLakeCatalog::DEFAULT_TARGET_FILE_SIZE`).
pub const DEFAULT_TARGET_FILE_SIZE: u64 = 1 << 29;

/// What the planning read says about one dataset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DatasetState {
    /// Live data files.
    pub files: i64,
    /// The most live files under the target size in one partition.
    pub mergeable: i64,
    /// Live files under the target size, in all partitions.
    pub small: i64,
    /// Inlined insertion records (live, deleted or superseded).
    pub inlined_rows: i64,
    /// Inline deletion markers against Parquet files.
    pub inline_deletions: i64,
    /// The markers could not be counted (DuckLake is asked to flush).
    pub markers_unknown: bool,
    /// Another connection flushed the dataset since srdp last read the catalog: this DuckDB
    /// instance may hold a stale list of its inlined tables (duckdb/ducklake#1305), and only a
    /// flush call finds out (and srdp then re-attaches), so it is called.
    pub flushed_elsewhere: bool,
}

impl DatasetState {
    /// Whether a flush may do anything.
    pub fn has_flush_work(&self) -> bool {
        self.inlined_rows > 0
            || self.inline_deletions > 0
            || self.markers_unknown
            || self.flushed_elsewhere
    }

    /// Whether a merge may do anything, after a flush that wrote (or not) new files.
    pub fn may_merge(&self, flushed_files: bool) -> bool {
        flushed_files || self.mergeable >= 2
    }
}

/// The planning read of one call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CatalogPlan {
    states: BTreeMap<i64, DatasetState>,
    /// The target file size the plan counted small files with, in bytes.
    target: u64,
}

impl CatalogPlan {
    /// The state of the dataset with `table_id` (a dataset the read did not see holds nothing).
    pub fn state(&self, table_id: i64) -> DatasetState {
        self.states.get(&table_id).copied().unwrap_or_default()
    }

    /// The target file size the plan counted small files with (see [`merge_target`]).
    pub fn target(&self) -> u64 {
        self.target
    }
}

/// Table ids named by `inlined_delete:<id>` entries of DuckLake's `changes_made` texts.
pub fn inline_deletion_tables(changes: &[String]) -> BTreeSet<i64> {
    tables_changed(changes, "inlined_delete")
}

/// Table ids named by `<kind>:<id>` entries of DuckLake's `changes_made` texts.
pub fn tables_changed(changes: &[String], kind: &str) -> BTreeSet<i64> {
    changes
        .iter()
        .filter_map(|text| crate::audit::parse_changes(text).ok())
        .flatten()
        .filter(|c| c.kind == kind)
        .filter_map(|c| match c.target {
            crate::audit::Target::Id(id) => Some(id),
            crate::audit::Target::Names(_) => None,
        })
        .collect()
}

/// A DuckDB memory size (`512MB`, `1GiB`, `2000000`) in bytes; `None` when it does not parse.
pub fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let factor: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" | "byte" | "bytes" => 1.0,
        "kb" | "kilobyte" | "kilobytes" => 1e3,
        "mb" | "megabyte" | "megabytes" => 1e6,
        "gb" | "gigabyte" | "gigabytes" => 1e9,
        "tb" | "terabyte" | "terabytes" => 1e12,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        "tib" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    // Saturating float-to-int conversion: a size beyond u64 is as good as infinite here.
    Some((number * factor).ceil() as u64)
}

/// The target size srdp plans merges with: the largest of DuckLake's default, every configured
/// option and the setting; a value that does not parse makes every file count as small.
pub fn merge_target(options: &[String], setting: Option<&str>) -> u64 {
    options
        .iter()
        .map(String::as_str)
        .chain(setting)
        .map(|v| parse_size(v).unwrap_or(u64::MAX))
        .fold(DEFAULT_TARGET_FILE_SIZE, u64::max)
}

impl Lake<'_> {
    /// The planning read for `datasets`: inlined rows, inline deletion markers, live files,
    /// mergeable groups and the datasets other connections flushed since the last call, in a
    /// handful of metadata queries whatever the number of datasets.
    pub fn plan(&self, datasets: &[Dataset]) -> Result<CatalogPlan> {
        let wanted: BTreeSet<i64> = datasets.iter().map(|d| d.table_id).collect();
        let mut states: BTreeMap<i64, DatasetState> = BTreeMap::new();
        for (id, inlined) in self.inlined(datasets)? {
            states.entry(id).or_default().inlined_rows = inlined.rows;
        }
        let options = self.target_size_options()?;
        let setting = self
            .read(
                &crate::sql::setting_value(&crate::sql::Literal::new("ducklake_target_file_size")),
                |r| r.get::<_, Option<String>>(0),
            )?
            .into_iter()
            .flatten()
            .next();
        let target = merge_target(&options, setting.as_deref());
        // A call on a few datasets (the Dagster job's one dataset per step) reads their files only.
        let ids: Vec<i64> = wanted.iter().copied().collect();
        let only = (ids.len() <= FEW_DATASETS).then_some(ids.as_slice());
        for (id, files, mergeable, small) in
            self.read(&self.meta.merge_plan(target, only), |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, Option<i64>>(2)?,
                    r.get::<_, Option<i64>>(3)?,
                ))
            })?
        {
            if wanted.contains(&id) {
                let state = states.entry(id).or_default();
                state.files = files;
                state.mergeable = mergeable.unwrap_or(0);
                state.small = small.unwrap_or(0);
            }
        }

        let changes = self.read(&self.meta.inline_deletion_changes(), |r| {
            r.get::<_, String>(0)
        })?;
        let marked: Vec<i64> = inline_deletion_tables(&changes)
            .intersection(&wanted)
            .copied()
            .collect();
        // `inlined_delete` also names deletes of inlined rows, which make no marker table: when
        // one query over all the tables fails, each is counted alone (a missing table holds no
        // marker; any other failure counts as markers of unknown number, so DuckLake is asked).
        let marker_tables: Vec<(i64, String)> = marked
            .iter()
            .map(|&id| (id, format!("ducklake_inlined_delete_{id}")))
            .collect();
        let counts =
            match self.count_rows(&marker_tables, &self.meta.inline_deletion_counts(&marked)) {
                Ok(counts) => counts,
                Err(_) => marked
                    .iter()
                    .map(|&id| {
                        (
                            id,
                            self.inline_deletions_of(id).unwrap_or(None).unwrap_or(-1),
                        )
                    })
                    .collect(),
            };
        for (id, n) in counts {
            let state = states.entry(id).or_default();
            if n < 0 {
                state.markers_unknown = true;
            } else {
                state.inline_deletions = n;
            }
        }
        // The first read's snapshot: anything committed since then is not srdp's (see settle).
        let latest = self.listed_snapshot()?;
        if let (Some(seen), Some(latest)) = (self.seen.get(), latest) {
            if latest > seen {
                let since = self.read(&self.meta.inline_flushes_since(seen), |r| {
                    r.get::<_, String>(0)
                })?;
                for id in tables_changed(&since, "inline_flush").intersection(&wanted) {
                    states.entry(*id).or_default().flushed_elsewhere = true;
                }
            }
        }
        if latest.is_some() {
            self.seen.set(latest);
        }
        Ok(CatalogPlan { states, target })
    }

    /// Inline deletion markers of one table now: 0 when it has no marker table, `None` when
    /// they cannot be counted.
    pub fn inline_deletions_of(&self, table_id: i64) -> Result<Option<i64>> {
        match self.read(&self.meta.inline_deletion_counts(&[table_id]), |r| {
            r.get::<_, i64>(1)
        }) {
            Ok(counts) => Ok(Some(counts.first().copied().unwrap_or(0))),
            Err(crate::error::SrdpError::DuckDb { message, .. })
                if message.contains("does not exist") =>
            {
                Ok(Some(0))
            }
            Err(_) => Ok(None),
        }
    }

    /// Markers a flush of `state`'s dataset wrote to a delete file: how many were counted before
    /// minus how many are left (0 when either count is unknown).
    pub fn markers_flushed(&self, table_id: i64, state: DatasetState) -> Result<i64> {
        if state.inline_deletions == 0 || state.markers_unknown {
            return Ok(0);
        }
        Ok(self
            .inline_deletions_of(table_id)?
            .map_or(0, |left| (state.inline_deletions - left).max(0)))
    }
}

/// The status of a compaction step pair from what the plan knew and what DuckLake did.
pub fn compact_status(
    rows_flushed: i64,
    markers_flushed: i64,
    files_processed: i64,
    upkeep: Upkeep,
) -> String {
    let base = plan::compact_status(
        rows_flushed + markers_flushed,
        files_processed,
        upkeep.runs(),
    );
    with_notes(
        base,
        markers_flushed,
        upkeep,
        rows_flushed + markers_flushed + files_processed > 0,
    )
}

/// The status of a flush step from what DuckLake did.
pub fn flush_status(rows_flushed: i64, markers_flushed: i64, upkeep: Upkeep) -> String {
    let base = plan::flush_status(rows_flushed + markers_flushed, upkeep.runs());
    with_notes(
        base,
        markers_flushed,
        upkeep,
        rows_flushed + markers_flushed > 0,
    )
}

/// `base`, then the markers note when a flush wrote markers, then [`EXPLICIT_NOTE`] when a step
/// that `changed` something overrode `auto_compact = false`.
fn with_notes(base: &str, markers: i64, upkeep: Upkeep, changed: bool) -> String {
    let mut status = base.to_string();
    if markers > 0 {
        status.push_str(&format!("; {}", markers_note(markers)));
    }
    if changed && upkeep.explicit().is_some() {
        status.push_str(EXPLICIT_NOTE);
    }
    status
}

/// Appended to the status of a step that overrode `auto_compact = false` (see
/// [`crate::plan::Upkeep::Explicit`]).
pub const EXPLICIT_NOTE: &str = "; explicit: auto_compact is false for bulk calls only";

/// `1 inline deletion marker written to a delete file` (plural from 2 on).
pub fn markers_note(markers: i64) -> String {
    let plural = if markers == 1 { "" } else { "s" };
    format!("{markers} inline deletion marker{plural} written to a delete file")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_like_duckdb_memory_settings() {
        assert_eq!(parse_size("2000000"), Some(2_000_000));
        assert_eq!(parse_size("512MB"), Some(512_000_000));
        assert_eq!(parse_size("1 GiB"), Some(1 << 30));
        assert_eq!(parse_size("1.5kb"), Some(1500));
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size("12 parsecs"), None);
    }

    #[test]
    fn the_merge_target_is_the_largest_anyone_configured() {
        assert_eq!(merge_target(&[], None), DEFAULT_TARGET_FILE_SIZE);
        assert_eq!(
            merge_target(&["2000000".into()], None),
            DEFAULT_TARGET_FILE_SIZE
        );
        assert_eq!(
            merge_target(&["2000000".into()], Some("1GB")),
            1_000_000_000
        );
        assert_eq!(
            merge_target(&["9000000000".into()], Some("1GB")),
            9_000_000_000
        );
        assert_eq!(merge_target(&[], Some("garbage")), u64::MAX);
    }

    #[test]
    fn inline_deletion_tables_come_from_the_change_texts() {
        let changes = vec![
            "inlined_delete:3".to_string(),
            "created_table:\"main\".\"inlined_delete:9\",inserted_into_table:4,inlined_delete:12"
                .to_string(),
            "not a change list".to_string(),
        ];
        assert_eq!(inline_deletion_tables(&changes), BTreeSet::from([3, 12]));
    }

    #[test]
    fn flush_and_merge_are_skipped_only_when_provably_idle() {
        let idle = DatasetState {
            files: 1,
            mergeable: 1,
            ..Default::default()
        };
        assert!(!idle.has_flush_work() && !idle.may_merge(false));
        assert!(idle.may_merge(true));
        let markers = DatasetState {
            inline_deletions: 2,
            ..idle
        };
        assert!(markers.has_flush_work());
        let two_small = DatasetState {
            mergeable: 2,
            ..idle
        };
        assert!(two_small.may_merge(false));
    }

    #[test]
    fn statuses_say_what_happened() {
        use crate::plan::OptionScope;
        let on = Upkeep::Maintained;
        assert_eq!(compact_status(0, 0, 0, on), "nothing to do");
        assert_eq!(compact_status(5, 0, 0, on), "compacted");
        assert_eq!(
            compact_status(0, 3, 0, on),
            "compacted; 3 inline deletion markers written to a delete file"
        );
        assert_eq!(
            compact_status(2, 1, 0, on),
            "compacted; 1 inline deletion marker written to a delete file"
        );
        assert_eq!(
            compact_status(0, 0, 0, Upkeep::Skipped),
            "skipped: auto_compact is false"
        );
        let explicit = Upkeep::Explicit(OptionScope::Schema);
        assert_eq!(
            compact_status(0, 1, 4, explicit),
            "compacted; 1 inline deletion marker written to a delete file; explicit: auto_compact is false for bulk calls only"
        );
        assert_eq!(compact_status(0, 0, 0, explicit), "nothing to do");
        assert_eq!(flush_status(4, 0, on), "flushed");
        assert_eq!(
            flush_status(4, 0, explicit),
            "flushed; explicit: auto_compact is false for bulk calls only"
        );
        assert_eq!(
            flush_status(0, 2, on),
            "flushed; 2 inline deletion markers written to a delete file"
        );
        assert_eq!(flush_status(0, 0, explicit), "nothing to do");
        assert_eq!(
            flush_status(0, 0, Upkeep::Skipped),
            "skipped: auto_compact is false"
        );
    }
}
