//! Inlined insertion records per dataset: what `srdp_inlined_row_count`, the pressure monitor and
//! the planning read count.

use super::Lake;
use crate::error::{Result, SrdpError};
use crate::plan::Dataset;
use crate::sql::MetadataTables;
use std::collections::BTreeMap;

/// Inlined insertion records of one dataset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Inlined {
    pub rows: i64,
    /// Of `rows`, the deleted or superseded ones (their flush writes a delete file too).
    pub ended: i64,
    pub tables: i64,
}

impl Lake<'_> {
    /// Inlined insertion records per table id, for the given datasets (missing = zero).
    ///
    /// A flush in another process can drop a superseded inlined table between reading the
    /// registry and counting it; the registry is then read again (up to three times).
    pub fn inlined(&self, datasets: &[Dataset]) -> Result<BTreeMap<i64, Inlined>> {
        let wanted: std::collections::BTreeSet<i64> = datasets.iter().map(|d| d.table_id).collect();
        let mut last = None;
        for attempt in 0..3 {
            let registry: Vec<(i64, String)> = if attempt == 0 {
                self.listing()?.registry.clone()
            } else {
                self.read(&self.meta.inlined_registry(), |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })?
            };
            let registry: Vec<(i64, String)> = registry
                .into_iter()
                .filter(|(id, _)| wanted.contains(id))
                .collect();
            match self.count_inlined(&registry) {
                Ok(counts) => {
                    let mut out: BTreeMap<i64, Inlined> = BTreeMap::new();
                    for (id, n, ended) in counts {
                        let entry = out.entry(id).or_default();
                        entry.rows += n;
                        entry.ended += ended;
                        entry.tables += 1;
                    }
                    return Ok(out);
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            SrdpError::InvalidArgument("inlined rows could not be counted".into())
        }))
    }

    /// Physical rows of each of `registry`'s inlined tables: `table_id, rows, ended` (see
    /// [`Lake::count_rows`]).
    fn count_inlined(&self, registry: &[(i64, String)]) -> Result<Vec<(i64, i64, i64)>> {
        self.count_rows(registry, &self.meta.inlined_counts(registry))
    }

    /// `table_id, rows, ended` of each of the inlined tables `tables` (`table_id, table name`). On a
    /// SQLite or PostgreSQL catalog the catalog database runs the union itself (see
    /// [`MetadataTables::inlined_counts_in_catalog_db`]); should that fail, DuckDB runs
    /// `fallback`, the same union over its catalog of the metadata, as on a DuckDB-file catalog.
    fn count_rows(&self, tables: &[(i64, String)], fallback: &str) -> Result<Vec<(i64, i64, i64)>> {
        let row = |r: &duckdb::Row| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
            ))
        };
        if let Some((function, schema)) = self.catalog_db_query() {
            let metadata_db = format!("__ducklake_metadata_{}", self.spec.alias);
            if let Some(query) =
                MetadataTables::inlined_counts_in_catalog_db(function, &metadata_db, schema, tables)
            {
                if let Ok(counts) = self.read_in_one_transaction(&query, row) {
                    return Ok(counts);
                }
            }
        }
        self.read(fallback, row)
    }

    /// The function that runs a query in the catalog database itself, and the schema its
    /// metadata tables are in: `sqlite_query` (tables in SQLite's `main`), `postgres_query` (in
    /// the metadata schema); `None` for a DuckDB-file catalog.
    pub(super) fn catalog_db_query(&self) -> Option<(&'static str, Option<&str>)> {
        match self.spec.backend {
            "sqlite" => Some(("sqlite_query", None)),
            "postgres" => Some(("postgres_query", Some(self.spec.metadata_schema.as_str()))),
            _ => None,
        }
    }
}
