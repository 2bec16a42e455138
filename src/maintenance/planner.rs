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
//!   in every group proves there is nothing to merge. A dataset that was just flushed or
//!   rewritten has new files, so it is always merged. When the plan cannot prove it, DuckLake is
//!   called;
//! * rewrite: the live files that carry deletes, each with its rows, size and deleted rows (its
//!   live delete file's count plus its inline deletion markers), decide whether and how the
//!   rewrite runs ([`super::rewrite::plan_rewrite`]); a dataset without such files has none.

use super::rewrite::{self, FileDeletes, RewritePlan};
use super::Lake;
use crate::error::{Result, SrdpError};
use crate::plan::{self, Dataset, ScopedOption};
use crate::sql::{Literal, MetadataTables};
use std::collections::{BTreeMap, BTreeSet};

/// Up to this many selected datasets, the planning read names their table ids.
const FEW_DATASETS: usize = 64;

/// DuckLake 1.0's default `target_file_size` (`DuckLakeCatalog::DEFAULT_TARGET_FILE_SIZE`).
pub const DEFAULT_TARGET_FILE_SIZE: u64 = 1 << 29;

/// What the planning read says about one dataset.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DatasetState {
    /// Live data files.
    pub files: i64,
    /// The most live files under the target size in one partition.
    pub mergeable: i64,
    /// Live files under the target size, in all partitions.
    pub small: i64,
    /// Inlined insertion records (live, deleted or superseded).
    pub inlined_rows: i64,
    /// Of those, the deleted or superseded ones: a flush of them writes a delete file for the
    /// new file too.
    pub inlined_ended: i64,
    /// Inline deletion markers against live Parquet files.
    pub inline_deletions: i64,
    /// The markers could not be counted (DuckLake is asked to flush).
    pub markers_unknown: bool,
    /// Another connection flushed the dataset since srdp last read the catalog: this DuckDB
    /// instance may hold a stale list of its inlined tables (duckdb/ducklake#1305), and only a
    /// flush call finds out (and srdp then re-attaches), so it is called.
    pub flushed_elsewhere: bool,
    /// Live files that carry deletes.
    pub files_with_deletes: i64,
    /// Deleted rows those files carry.
    pub deleted_rows: i64,
    /// The table has a table of inline deletion markers (a small delete hit a Parquet file of it
    /// once; the marker table stays when it is flushed).
    pub marker_table: bool,
    /// Markers name files that are no longer live: a delete that committed beside a rewrite or
    /// merge, which the guard applies again before anything else ([`super::guard`]).
    pub markers_on_retired_files: bool,
    /// What the rewrite step does, `None` when no file needs it.
    pub rewrite: Option<RewritePlan>,
}

impl DatasetState {
    /// Whether a flush may do anything.
    pub fn has_flush_work(&self) -> bool {
        self.inlined_rows > 0
            || self.inline_deletions > 0
            || self.markers_unknown
            || self.flushed_elsewhere
    }

    /// Whether a flush that wrote `flushed` rows may have written a delete file for its new file
    /// (inlined rows deleted or superseded before it), so the rewrite is planned again: the plan
    /// saw such rows, or the flush wrote other rows than the plan counted (rows that landed
    /// since, or a flush that counts only live rows).
    pub fn flush_may_leave_deletes(&self, flushed: i64) -> bool {
        flushed > 0 && (self.inlined_ended > 0 || flushed != self.inlined_rows)
    }

    /// Whether a merge may do anything, after a flush or rewrite that wrote (or not) new files.
    pub fn may_merge(&self, new_files: bool) -> bool {
        new_files || self.mergeable >= 2
    }
}

/// The planning read of one call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CatalogPlan {
    states: BTreeMap<i64, DatasetState>,
    /// The target file size the plan counted small files with, in bytes.
    target: u64,
    /// The catalog's maintenance options and the `ducklake_target_file_size` setting, for each
    /// dataset's rewrite rule ([`CatalogPlan::rewrite_rule`]).
    options: Vec<ScopedOption>,
    setting: Option<String>,
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

    /// The target file size (bytes) and deleted-share threshold the rewrite of `dataset` uses.
    pub fn rewrite_rule(&self, dataset: &Dataset) -> Result<RewriteRule> {
        Ok(RewriteRule {
            target: dataset_target(&self.options, self.setting.as_deref(), dataset),
            threshold: rewrite_threshold(&self.options, dataset)?,
        })
    }
}

/// Which files of a dataset the rewrite wants (see [`super::rewrite`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RewriteRule {
    /// The target file size in bytes: files under it are rewritten for any delete.
    pub target: u64,
    /// The deleted share at which a file at or above the target is rewritten.
    pub threshold: f64,
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
            let state = states.entry(id).or_default();
            state.inlined_rows = inlined.rows;
            state.inlined_ended = inlined.ended;
        }
        let options = self.options()?;
        let sizes: Vec<String> = options
            .iter()
            .filter(|o| o.key == "target_file_size")
            .map(|o| o.value.clone())
            .collect();
        let setting = self
            .read(
                &crate::sql::setting_value(&crate::sql::Literal::new("ducklake_target_file_size")),
                |r| r.get::<_, Option<String>>(0),
            )?
            .into_iter()
            .flatten()
            .next();
        let target = merge_target(&sizes, setting.as_deref());
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

        let Backlog {
            files: backlog,
            unknown,
            marker_tables,
            retired_marked,
        } = self.delete_backlog(&wanted, only, None)?;
        for id in retired_marked {
            states.entry(id).or_default().markers_on_retired_files = true;
        }
        for id in unknown {
            states.entry(id).or_default().markers_unknown = true;
        }
        for id in marker_tables {
            states.entry(id).or_default().marker_table = true;
        }
        let plan = CatalogPlan {
            states: BTreeMap::new(),
            target,
            options: options.to_vec(),
            setting,
        };
        for d in datasets {
            let Some(files) = backlog.get(&d.table_id) else {
                continue;
            };
            let rule = plan.rewrite_rule(d)?;
            let state = states.entry(d.table_id).or_default();
            state.inline_deletions = files.iter().map(|f| f.markers).sum();
            state.apply_backlog(files, rule);
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
        Ok(CatalogPlan { states, ..plan })
    }

    /// The live files that carry deletes of the `wanted` tables (`only`: the table ids the
    /// metadata read names, see [`MetadataTables::delete_backlog`]), each with its deleted rows
    /// (delete file and inline deletion markers), and the tables whose markers could not be
    /// counted. Three reads whatever the number of tables; `marked`: the tables known to have a
    /// marker table (the snapshots that name them are not read again).
    fn delete_backlog(
        &self,
        wanted: &BTreeSet<i64>,
        only: Option<&[i64]>,
        marked: Option<&[i64]>,
    ) -> Result<Backlog> {
        let markers = self.marker_counts(wanted, marked)?;
        let marked: Vec<i64> = markers.per_file.keys().map(|(_, file)| *file).collect();
        let mut backlog: BTreeMap<i64, Vec<FileBacklog>> = BTreeMap::new();
        let mut live_marked: BTreeSet<(i64, i64)> = BTreeSet::new();
        for (table_id, file_id, rows, bytes, deleted) in
            self.read(&self.meta.delete_backlog(only, &marked), |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, i64>(4)?,
                ))
            })?
        {
            if !wanted.contains(&table_id) {
                continue;
            }
            // Markers count only against live files: a marker of a retired file is one a
            // compaction raced with (see `super::guard`), not work for a flush.
            let on_file = markers
                .per_file
                .get(&(table_id, file_id))
                .copied()
                .unwrap_or(0);
            live_marked.insert((table_id, file_id));
            backlog.entry(table_id).or_default().push(FileBacklog {
                file: FileDeletes {
                    rows,
                    bytes: u64::try_from(bytes).unwrap_or(0),
                    deleted: deleted + on_file,
                },
                markers: on_file,
            });
        }
        let retired_marked = markers
            .per_file
            .keys()
            .filter(|key| !live_marked.contains(key))
            .map(|(table_id, _)| *table_id)
            .collect();
        Ok(Backlog {
            files: backlog,
            unknown: markers.unknown,
            marker_tables: markers.tables,
            retired_marked,
        })
    }

    /// The rewrite of `dataset` planned again from the catalog now: after a flush that wrote
    /// rows, whose new file carries the deletes of inlined rows deleted before it (DuckLake
    /// writes them to a delete file of the new file). One dataset's reads: its markers (when it
    /// has a marker table) and its files with deletes.
    pub fn replan_rewrite(
        &self,
        dataset: &Dataset,
        state: DatasetState,
        rule: RewriteRule,
    ) -> Result<DatasetState> {
        let wanted = BTreeSet::from([dataset.table_id]);
        let marked: &[i64] = if state.marker_table {
            &[dataset.table_id]
        } else {
            &[]
        };
        let backlog = self
            .delete_backlog(&wanted, Some(&[dataset.table_id]), Some(marked))?
            .files;
        let mut state = DatasetState {
            files_with_deletes: 0,
            deleted_rows: 0,
            rewrite: None,
            ..state
        };
        if let Some(files) = backlog.get(&dataset.table_id) {
            state.apply_backlog(files, rule);
        }
        Ok(state)
    }

    /// The live files of `dataset` that carry deletes, read now (for a rewrite in bounded calls,
    /// [`super::rewrite::batch_thresholds`]).
    pub fn files_with_deletes(
        &self,
        dataset: &Dataset,
        state: DatasetState,
    ) -> Result<Vec<FileDeletes>> {
        let wanted = BTreeSet::from([dataset.table_id]);
        let marked: &[i64] = if state.marker_table {
            &[dataset.table_id]
        } else {
            &[]
        };
        let backlog = self.delete_backlog(&wanted, Some(&[dataset.table_id]), Some(marked))?;
        Ok(backlog
            .files
            .get(&dataset.table_id)
            .map(|files| files.iter().map(|f| f.file).collect())
            .unwrap_or_default())
    }

    /// Inline deletion markers per (table, data file) of the `wanted` tables, and the tables
    /// whose markers could not be counted. The tables that snapshots name with
    /// `inlined_delete:<id>` are counted in one union, run by the catalog database where it can
    /// ([`MetadataTables::marker_counts_in_catalog_db`]); `inlined_delete` also names deletes of
    /// inlined rows, which make no marker table, so when the union fails each table is counted
    /// alone (a missing table holds no marker; any other failure leaves its markers unknown, and
    /// DuckLake is asked to flush).
    fn marker_counts(
        &self,
        wanted: &BTreeSet<i64>,
        marked: Option<&[i64]>,
    ) -> Result<MarkerCounts> {
        let marked: Vec<i64> = match marked {
            Some(marked) => marked.to_vec(),
            None => {
                let changes = self.read(&self.meta.inline_deletion_changes(), |r| {
                    r.get::<_, String>(0)
                })?;
                inline_deletion_tables(&changes)
                    .intersection(wanted)
                    .copied()
                    .collect()
            }
        };
        let mut counts = MarkerCounts::default();
        if marked.is_empty() {
            return Ok(counts);
        }
        let rows = match self.marker_rows(&marked) {
            Ok(rows) => {
                counts.tables.extend(marked.iter().copied());
                rows
            }
            Err(_) => {
                let mut rows = Vec::new();
                for &id in &marked {
                    match self.marker_rows(&[id]) {
                        Ok(found) => {
                            counts.tables.insert(id);
                            rows.extend(found)
                        }
                        Err(SrdpError::DuckDb { message, .. })
                            if message.contains("does not exist") => {}
                        Err(_) => {
                            counts.tables.insert(id);
                            counts.unknown.insert(id);
                        }
                    }
                }
                rows
            }
        };
        for (table_id, file_id, n) in rows {
            *counts.per_file.entry((table_id, file_id)).or_default() += n;
        }
        Ok(counts)
    }

    /// `table_id, file_id, markers` of the marker tables of `table_ids` (see
    /// [`Lake::marker_counts`]).
    fn marker_rows(&self, table_ids: &[i64]) -> Result<Vec<(i64, i64, i64)>> {
        let row = |r: &duckdb::Row| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
            ))
        };
        if let Some((function, schema)) = self.catalog_db_query() {
            if let Some(query) = MetadataTables::marker_counts_in_catalog_db(
                function,
                &format!("__ducklake_metadata_{}", self.spec.alias),
                schema,
                table_ids,
            ) {
                if let Ok(rows) = self.read_in_one_transaction(&query, row) {
                    return Ok(rows);
                }
            }
        }
        self.read(&self.meta.marker_counts(table_ids), row)
    }

    /// Inline deletion markers of one table now, on live and retired files alike: 0 when it has
    /// no marker table, `None` when they cannot be counted.
    pub fn inline_deletions_of(&self, table_id: i64) -> Result<Option<i64>> {
        match self.read(&self.meta.inline_deletion_counts(&[table_id]), |r| {
            r.get::<_, i64>(1)
        }) {
            Ok(counts) => Ok(Some(counts.first().copied().unwrap_or(0))),
            Err(SrdpError::DuckDb { message, .. }) if message.contains("does not exist") => {
                Ok(Some(0))
            }
            Err(_) => Ok(None),
        }
    }
}

/// The files with deletes per table id, and the tables whose markers could not be counted.
#[derive(Debug, Default)]
struct Backlog {
    files: BTreeMap<i64, Vec<FileBacklog>>,
    unknown: BTreeSet<i64>,
    /// The tables with a table of inline deletion markers.
    marker_tables: BTreeSet<i64>,
    /// The tables with markers on files that are no longer live.
    retired_marked: BTreeSet<i64>,
}

/// A live file with deletes, and how many of them are inline deletion markers.
#[derive(Debug, Clone, Copy, PartialEq)]
struct FileBacklog {
    file: FileDeletes,
    markers: i64,
}

impl DatasetState {
    /// The delete backlog of the dataset's `files`, and the rewrite it asks for under `rule`.
    fn apply_backlog(&mut self, files: &[FileBacklog], rule: RewriteRule) {
        let files: Vec<FileDeletes> = files.iter().map(|f| f.file).collect();
        self.files_with_deletes = i64::try_from(files.len()).unwrap_or(i64::MAX);
        self.deleted_rows = files.iter().map(|f| f.deleted).sum();
        self.rewrite = rewrite::plan_rewrite(&files, rule.target, rule.threshold);
    }
}

/// Inline deletion markers per (table id, data file id), and the tables whose markers could not
/// be counted.
#[derive(Debug, Default)]
struct MarkerCounts {
    per_file: BTreeMap<(i64, i64), i64>,
    unknown: BTreeSet<i64>,
    /// The tables whose marker table exists.
    tables: BTreeSet<i64>,
}

/// The target file size DuckLake uses for `dataset`: the `ducklake_target_file_size` setting
/// where it is set, else the `target_file_size` option (table, schema, catalog), else DuckLake's
/// default; a value that does not parse counts every file as small (as [`merge_target`] does).
pub fn dataset_target(options: &[ScopedOption], setting: Option<&str>, dataset: &Dataset) -> u64 {
    let value = setting
        .filter(|v| !v.trim().is_empty())
        .or_else(|| plan::scoped_value(options, "target_file_size", dataset).map(|(v, _)| v));
    match value {
        None => DEFAULT_TARGET_FILE_SIZE,
        Some(v) => parse_size(v).unwrap_or(u64::MAX),
    }
}

/// The rewrite threshold of `dataset` (see [`rewrite::threshold`]); an option that is not a
/// share is an error naming it.
fn rewrite_threshold(options: &[ScopedOption], dataset: &Dataset) -> Result<f64> {
    let option = plan::scoped_value(options, "rewrite_delete_threshold", dataset);
    rewrite::threshold(option.map(|(v, _)| v)).map_err(|value| {
        let scope = match option.map(|(_, scope)| scope) {
            Some(plan::OptionScope::Table) => format!("on table '{}'", dataset.name()),
            Some(plan::OptionScope::Schema) => format!("on schema '{}'", dataset.schema),
            _ => "for the catalog".to_string(),
        };
        SrdpError::InvalidArgument(format!(
            "srdp_compact: DuckLake's option rewrite_delete_threshold = {} {scope} is not a share \
             from 0 to 1, so dataset '{}' cannot be planned; set it again with \
             CALL <lake>.set_option('rewrite_delete_threshold', 0.3, ...) or remove it",
            Literal::new(&value),
            dataset.name()
        ))
    })
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
    fn the_rewrite_is_planned_again_only_after_a_flush_that_may_leave_deletes() {
        let clean = DatasetState {
            inlined_rows: 30,
            ..DatasetState::default()
        };
        // The rows the plan counted, none of them deleted: no delete file, no second read.
        assert!(!clean.flush_may_leave_deletes(30));
        assert!(!clean.flush_may_leave_deletes(0));
        // Rows landed after the plan (they may have been deleted since).
        assert!(clean.flush_may_leave_deletes(31));
        let deleted = DatasetState {
            inlined_ended: 1,
            ..clean
        };
        assert!(deleted.flush_may_leave_deletes(30));
        assert!(!deleted.flush_may_leave_deletes(0));
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
}
