//! The handle every maintenance step shares: one attached lake on srdp's runner connection, the
//! call's first read of its metadata, and srdp's view of which snapshots are its own.

use super::write_lock;
use crate::attach::AttachSpec;
use crate::error::{Result, SrdpError};
use crate::plan::{self, Dataset, ScopedOption};
use crate::sql::MetadataTables;
use duckdb::Connection;

/// The selected datasets of one attached lake, with what the metadata says about them.
pub struct Lake<'a> {
    pub(super) conn: &'a Connection,
    pub(super) spec: &'a AttachSpec,
    pub(super) meta: MetadataTables,
    /// The latest metadata snapshot srdp's last planning read of this attachment saw (`None`:
    /// unknown); the runner keeps it between calls.
    pub(super) seen: std::cell::Cell<Option<i64>>,
    /// Snapshots srdp's own steps certainly committed since `seen` (see [`Lake::settle`]).
    pub(super) own: std::cell::Cell<i64>,
    /// The call's first read (see [`Lake::listing`]).
    pub(super) listing: std::cell::OnceCell<Listing>,
    /// The caller's [`CALLER_SETTINGS`] for this call (see [`Lake::use_caller_settings`]).
    pub(super) caller: std::cell::RefCell<Vec<(String, Option<String>)>>,
    /// A SQLite catalog's write lock, held by steps after one lost its commit (see
    /// [`write_lock`]); `None` for other catalogs.
    pub(super) write_lock: Option<write_lock::WriteLock<'a>>,
}

/// What the first read of a call says about the catalog ([`MetadataTables::listing`]).
#[derive(Debug, Clone, Default)]
pub(super) struct Listing {
    /// Live datasets, in (schema, table) order.
    pub(super) datasets: Vec<Dataset>,
    /// Live schema names, in order.
    pub(super) schemas: Vec<String>,
    /// DuckLake's registry of inlined insertion tables: `table_id, table_name`.
    pub(super) registry: Vec<(i64, String)>,
    /// Every `auto_compact`, `target_file_size` and `rewrite_delete_threshold` option.
    pub(super) options: Vec<ScopedOption>,
    pub(super) latest: Option<i64>,
}

impl<'a> Lake<'a> {
    pub fn new(conn: &'a Connection, spec: &'a AttachSpec) -> Self {
        Lake {
            conn,
            spec,
            meta: MetadataTables::new(&spec.alias, &spec.metadata_schema),
            seen: std::cell::Cell::new(None),
            own: std::cell::Cell::new(0),
            listing: std::cell::OnceCell::new(),
            caller: std::cell::RefCell::new(Vec::new()),
            write_lock: None,
        }
    }

    /// This lake with `lock_conn` to hold the catalog's write lock, for a SQLite catalog (see
    /// [`write_lock`]); other catalogs need none.
    pub fn with_write_lock(mut self, lock_conn: &'a Connection) -> Self {
        if let ("sqlite", Some(file)) = (self.spec.backend, self.spec.metadata_file.as_deref()) {
            self.write_lock = Some(write_lock::WriteLock::new(
                lock_conn,
                file,
                &self.spec.alias,
            ));
        }
        self
    }

    /// This lake with the snapshot srdp saw last (see [`Lake::seen`]).
    pub fn with_seen(self, seen: Option<i64>) -> Self {
        self.seen.set(seen);
        self
    }

    /// The latest metadata snapshot the last planning read saw.
    pub fn seen(&self) -> Option<i64> {
        self.seen.get()
    }

    /// Records that a step of srdp's own certainly committed one snapshot (a flush that wrote
    /// rows or markers, a merge that processed files). Count only certain ones: an uncounted
    /// snapshot only makes [`Lake::settle`] cautious, a counted one that was not made could hide
    /// another connection's.
    pub(super) fn committed_one(&self) {
        self.own.set(self.own.get() + 1);
    }

    /// After srdp's steps on a dataset: whether every snapshot committed since `seen` is one of
    /// srdp's own (then nobody else wrote in between, and srdp's view moves past its own commits,
    /// so the next call does not mistake them for another connection's). One metadata read.
    pub fn settle(&self) -> Result<bool> {
        let latest = self.latest_snapshot()?;
        match (self.seen.get(), latest) {
            (Some(seen), Some(latest)) if latest == seen + self.own.get() => {
                self.seen.set(Some(latest));
                self.own.set(0);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// [`Lake::settle`] at the end of a call, when srdp committed anything since its last read.
    pub fn settle_own_commits(&self) -> Result<()> {
        if self.own.get() > 0 {
            self.settle()?;
        }
        Ok(())
    }

    /// The catalog's latest snapshot id now.
    pub fn latest_snapshot(&self) -> Result<Option<i64>> {
        Ok(self
            .read(&self.meta.latest_snapshot(), |r| r.get::<_, Option<i64>>(0))?
            .into_iter()
            .flatten()
            .next())
    }

    pub(super) fn read<T>(
        &self,
        query: &str,
        row: impl FnMut(&duckdb::Row) -> duckdb::Result<T>,
    ) -> Result<Vec<T>> {
        let failed = |e: duckdb::Error| {
            SrdpError::duckdb(
                format!(
                    "reading the metadata of catalog '{}' failed",
                    self.spec.catalog
                ),
                e,
            )
        };
        let mut statement = self.conn.prepare(query).map_err(failed)?;
        let rows = statement.query_map([], row).map_err(failed)?;
        rows.collect::<duckdb::Result<Vec<T>>>().map_err(failed)
    }

    /// The call's first read, in one metadata query, made once per call: datasets, schemas, the
    /// inlined-table registry, the options maintenance needs and the latest snapshot.
    pub(super) fn listing(&self) -> Result<&Listing> {
        if let Some(listing) = self.listing.get() {
            return Ok(listing);
        }
        type Row = (
            String,
            Option<i64>,
            Option<String>,
            Option<i64>,
            Option<String>,
        );
        let rows: Vec<Row> = self.read(&self.meta.listing(), |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?;
        let mut listing = Listing::default();
        for (kind, id1, text1, id2, text2) in rows {
            match (kind.as_str(), id1, text1, id2, text2) {
                ("dataset", Some(schema_id), Some(schema), Some(table_id), Some(table)) => {
                    listing.datasets.push(Dataset {
                        schema_id,
                        schema,
                        table_id,
                        table,
                    })
                }
                ("schema", _, Some(schema), _, _) => listing.schemas.push(schema),
                ("inlined", _, _, Some(table_id), Some(name)) => {
                    listing.registry.push((table_id, name))
                }
                (
                    key @ ("auto_compact" | "target_file_size" | "rewrite_delete_threshold"),
                    scope_id,
                    scope,
                    _,
                    Some(value),
                ) => listing.options.push(ScopedOption {
                    key: key.to_string(),
                    scope,
                    scope_id,
                    value,
                }),
                ("latest", _, _, latest, _) => listing.latest = latest,
                _ => {}
            }
        }
        listing
            .datasets
            .sort_by(|a, b| (&a.schema, &a.table).cmp(&(&b.schema, &b.table)));
        listing.schemas.sort();
        Ok(self.listing.get_or_init(|| listing))
    }

    /// The datasets selected by schema and table name (see [`plan::select`]).
    pub fn select(&self, schema: Option<&str>, table: Option<&str>) -> Result<Vec<Dataset>> {
        let listing = self.listing()?;
        plan::select(
            &self.spec.catalog,
            &listing.datasets,
            &listing.schemas,
            schema,
            table,
        )
    }

    /// [`Lake::read`] bound and executed in one transaction. `sqlite_query` keeps the SQLite
    /// connection of the transaction that bound it, which an autocommit prepare closes before
    /// the statement executes (the execution then fails with SQLite's "out of memory").
    pub(super) fn read_in_one_transaction<T>(
        &self,
        query: &str,
        row: impl FnMut(&duckdb::Row) -> duckdb::Result<T>,
    ) -> Result<Vec<T>> {
        self.conn
            .execute_batch("BEGIN TRANSACTION")
            .map_err(|e| SrdpError::duckdb("starting a metadata read failed".to_string(), e))?;
        let outcome = self.read(query, row);
        let end = if outcome.is_ok() {
            "COMMIT"
        } else {
            "ROLLBACK"
        };
        let ended = self.conn.execute_batch(end);
        let rows = outcome?;
        ended.map_err(|e| SrdpError::duckdb("ending a metadata read failed".to_string(), e))?;
        Ok(rows)
    }

    /// Live data files of one dataset.
    pub fn files(&self, dataset: &Dataset) -> Result<i64> {
        let counts = self.read(&self.meta.live_files_of(dataset.table_id), |r| r.get(0))?;
        Ok(counts.first().copied().unwrap_or(0))
    }

    /// The catalog's maintenance options at every scope (from the call's first read).
    pub fn options(&self) -> Result<&[ScopedOption]> {
        Ok(&self.listing()?.options)
    }

    /// The latest snapshot the call's first read saw.
    pub fn listed_snapshot(&self) -> Result<Option<i64>> {
        Ok(self.listing()?.latest)
    }
}
