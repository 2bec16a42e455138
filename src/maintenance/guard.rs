//! The lost-delete guard: deletes DuckLake 1.0 loses to a concurrent compaction, applied again.
//!
//! A small delete is stored as inline deletion markers (file, position) against Parquet files.
//! DuckLake 1.0 checks a rewrite or merge against deletes that wrote delete files, not against
//! markers: a small delete that commits while a rewrite or merge of the same table is in flight
//! keeps pointing at a file the compaction retired, and the deleted rows are back in the
//! compaction's output. srdp maps every marker on a file that is no longer live back to a row id
//! and deletes the rows that are still there, in a labelled step of its own: right after its own
//! rewrite or merge of a dataset when another connection committed meanwhile ([`Lake::settle`]
//! says whether one did; [`LiveFiles`] read before the first compaction step know the files a
//! merge took away from the metadata), and before a dataset's steps when the planning read saw
//! markers on retired files (a delete that committed after the last call's guard had looked).
//! A row a marker names that is gone (a rewrite applied the marker, or the guard did before) is
//! not deleted again; row ids are never reused, so a live row a marker names was lost.

use super::{Lake, StepMode};
use crate::error::{Result, SrdpError};
use crate::plan::Dataset;
use crate::sql::{self, Ident, Literal};
use std::collections::{BTreeMap, BTreeSet};

/// A data file as the guard needs it to map a position in it back to a row id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRef {
    /// The first row id, when the file's rows have contiguous row ids (`None`: the file stores
    /// its row ids, as a rewrite's output does).
    pub row_id_start: Option<i64>,
    /// The file's path as the catalog records it.
    pub path: String,
    /// The snapshot that added the file: every row of it is visible there.
    pub begin_snapshot: i64,
}

/// The live data files of a dataset at one moment, by data file id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveFiles {
    pub files: BTreeMap<i64, FileRef>,
}

impl LiveFiles {
    /// How many files are live.
    pub fn count(&self) -> i64 {
        i64::try_from(self.files.len()).unwrap_or(i64::MAX)
    }

    /// Adds the files of `other` this set does not know (a bounded merge reads the live files
    /// before each of its calls).
    pub fn extend(&mut self, other: LiveFiles) {
        for (id, file) in other.files {
            self.files.entry(id).or_insert(file);
        }
    }
}

/// The inline deletion markers `(file_id, position)` on files that are not live (`live`), by file:
/// positions sorted and unique.
pub fn retired_markers(markers: &[(i64, i64)], live: &LiveFiles) -> BTreeMap<i64, Vec<i64>> {
    let mut retired: BTreeMap<i64, BTreeSet<i64>> = BTreeMap::new();
    for (file, position) in markers {
        if !live.files.contains_key(file) {
            retired.entry(*file).or_default().insert(*position);
        }
    }
    retired
        .into_iter()
        .map(|(file, positions)| (file, positions.into_iter().collect()))
        .collect()
}

/// The last segment of a data file's path: DuckLake's file names are unique.
fn file_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

impl Lake<'_> {
    /// The live data files of `dataset` now.
    pub fn live_files(&self, dataset: &Dataset) -> Result<LiveFiles> {
        self.file_refs(&self.meta.live_file_row_starts(dataset.table_id))
    }

    /// The data files `ids` of `dataset` the metadata still has, live or retired.
    fn data_files(&self, dataset: &Dataset, ids: &[i64]) -> Result<LiveFiles> {
        self.file_refs(&self.meta.data_files_by_id(dataset.table_id, ids))
    }

    /// The files a `data_file_id, row_id_start, path, begin_snapshot` query reads.
    fn file_refs(&self, query: &str) -> Result<LiveFiles> {
        let rows = self.read(query, |r| {
            Ok((
                r.get::<_, i64>(0)?,
                FileRef {
                    row_id_start: r.get::<_, Option<i64>>(1)?,
                    path: r.get::<_, String>(2)?,
                    begin_snapshot: r.get::<_, i64>(3)?,
                },
            ))
        })?;
        Ok(LiveFiles {
            files: rows.into_iter().collect(),
        })
    }

    /// Applies again the deletes a compaction of `dataset` lost (see the module documentation):
    /// `before`, when known, are the live files before the dataset's first compaction step (a
    /// merge's inputs leave the metadata; a rewrite's stay, and are read). Returns how many rows
    /// were deleted again.
    pub fn reapply_lost_deletes(
        &self,
        dataset: &Dataset,
        before: Option<&LiveFiles>,
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
        let after = self.live_files(dataset)?;
        let retired = retired_markers(&markers, &after);
        if retired.is_empty() {
            return Ok(0);
        }
        let known = before.cloned().unwrap_or_default();
        let unknown: Vec<i64> = retired
            .keys()
            .filter(|id| !known.files.contains_key(id))
            .copied()
            .collect();
        let mut files = known;
        if !unknown.is_empty() {
            files.extend(self.data_files(dataset, &unknown)?);
        }
        let mut row_ids = BTreeSet::new();
        for (file_id, positions) in &retired {
            // A file a merge took away before `before` was read left no row to map from.
            let Some(file) = files.files.get(file_id) else {
                continue;
            };
            match file.row_id_start {
                Some(start) => row_ids.extend(positions.iter().map(|p| start + p)),
                None => row_ids.extend(self.row_ids_of(dataset, file, positions)?),
            }
        }
        if row_ids.is_empty() {
            return Ok(0);
        }
        let candidates: Vec<i64> = row_ids.into_iter().collect();
        let (alias, schema, table) = (
            Ident::new(&self.spec.alias),
            Ident::new(&dataset.schema),
            Ident::new(&dataset.table),
        );
        // A marker the rewrite applied names a row that is gone: only rows still there are lost.
        let lost = self.read(
            &sql::maintenance::live_row_ids(&alias, &schema, &table, &candidates),
            |r| r.get::<_, i64>(0),
        )?;
        if lost.is_empty() {
            return Ok(0);
        }
        let statement = sql::delete_row_ids(&alias, &schema, &table, &lost);
        let label = self.label(&format!(
            "srdp_compact: re-apply deletes lost to a compaction of {}",
            dataset.name()
        ));
        let deleted = self.step(
            dataset,
            "re-apply lost deletes",
            StepMode::BoundInOneTransaction {
                before: &label,
                after: "",
                flips: false,
                lock: super::LockUse::ClearBeforeStatement,
            },
            &statement,
            done,
            |r| r.get::<_, i64>(0),
        )?;
        Ok(deleted.value)
    }

    /// The row ids at `positions` of `file`, a file that stores its row ids: read from the table
    /// at the snapshot that added the file, where every row of it is visible.
    fn row_ids_of(&self, dataset: &Dataset, file: &FileRef, positions: &[i64]) -> Result<Vec<i64>> {
        let query = sql::maintenance::row_ids_at_positions(
            &Ident::new(&self.spec.alias),
            &Ident::new(&dataset.schema),
            &Ident::new(&dataset.table),
            file.begin_snapshot,
            &Literal::new(file_name(&file.path)),
            positions,
        );
        self.read(&query, |r| r.get::<_, i64>(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(ids: &[i64]) -> LiveFiles {
        LiveFiles {
            files: ids
                .iter()
                .map(|&id| {
                    let file = FileRef {
                        row_id_start: Some(id * 50),
                        path: format!("f{id}.parquet"),
                        begin_snapshot: 1,
                    };
                    (id, file)
                })
                .collect(),
        }
    }

    #[test]
    fn retired_markers_are_those_on_files_no_longer_live() {
        let live = files(&[2, 3]);
        // Files 0 and 1 were compacted away, file 9 long before; file 2 is live.
        let markers = [(1, 27), (0, 3), (2, 5), (9, 1), (0, 3), (0, 1)];
        assert_eq!(
            retired_markers(&markers, &live),
            BTreeMap::from([(0, vec![1, 3]), (1, vec![27]), (9, vec![1])])
        );
        assert!(retired_markers(&[], &live).is_empty());
        let mut grown = files(&[0]);
        grown.extend(files(&[0, 5]));
        assert_eq!(grown.count(), 2);
    }

    #[test]
    fn file_names_are_the_last_path_segment() {
        assert_eq!(file_name("ducklake-1.parquet"), "ducklake-1.parquet");
        assert_eq!(file_name("p=1/ducklake-2.parquet"), "ducklake-2.parquet");
        assert_eq!(
            file_name("s3://bucket/lake/t/ducklake-3.parquet"),
            "ducklake-3.parquet"
        );
        assert_eq!(
            file_name(r"C:\lake\ducklake-4.parquet"),
            "ducklake-4.parquet"
        );
    }
}
