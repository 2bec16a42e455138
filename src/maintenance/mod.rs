//! Dataset maintenance on the runner connection: inlined-row counts, flush and compaction.
//!
//! One dataset at a time, in (schema, table) order. Every step is one autocommit statement on
//! the runner, so it commits on its own: a failure later in the call never undoes an earlier
//! dataset. A step that fails with a retryable error (see [`plan::classify`]) is run again with
//! jittered, doubling waits until its time budget is spent (see [`crate::retry`]); DuckLake
//! re-plans from the current snapshot, so a re-run is safe. srdp only ever re-runs the SQL it
//! wrote itself.

pub mod batched;
pub mod planner;
pub mod write_lock;

use crate::attach::AttachSpec;
use crate::audit;
use crate::error::{Result, SrdpError};
use crate::plan::{self, AutoCompactOption, Dataset, Failure, OptionScope};
use crate::retry::Jitter;
use crate::sql::{self, Ident, Literal, MetadataTables};
use duckdb::Connection;
use std::collections::BTreeMap;
use std::time::Instant;

/// The DuckLake settings that shape a flush or a merge. srdp's steps run on its own connection,
/// which sees only global values; each call gives that connection the caller's effective values
/// (session or global) of these, so a caller's `SET SESSION` counts as it does for the plain call.
pub const CALLER_SETTINGS: &[&str] = &[
    "ducklake_target_file_size",
    "ducklake_write_deletion_vectors",
    "ducklake_max_retry_count",
    "ducklake_retry_wait_ms",
    "ducklake_retry_backoff",
];

/// DuckLake's commit retry for srdp's steps, where the caller left DuckLake's default: (setting,
/// DuckLake's default, srdp's value). A step's commit that meets another commit (PostgreSQL's
/// `ducklake_snapshot` key, a conflict) is retried by DuckLake's commit loop, which re-checks
/// conflicts and writes the metadata again without redoing the step's Parquet work. DuckLake's
/// default (10 retries, 100 ms doubling by 1.5, about 11 s of waits) loses beside writers that
/// commit every few milliseconds: each wait lets more commits land, and a step that ran out of
/// retries redid its Parquet work (bench/load.py, four loaders on PostgreSQL: calls of 7-28 s);
/// short constant waits and many retries take the next gap (45 calls in 30 s, the longest
/// 2.8 s). A caller who set another value keeps it.
pub const STEP_COMMIT_RETRY: &[(&str, &str, &str)] = &[
    ("ducklake_max_retry_count", "10", "1000"),
    ("ducklake_retry_wait_ms", "100", "10"),
    ("ducklake_retry_backoff", "1.5", "1"),
];

/// The values srdp's connection takes for a call: the caller's, except that DuckLake's default
/// commit retry (unset, or equal to DuckLake's default) becomes [`STEP_COMMIT_RETRY`]'s.
pub fn step_settings(caller: &[(String, Option<String>)]) -> Vec<(String, Option<String>)> {
    caller
        .iter()
        .map(|(name, value)| {
            let ours = STEP_COMMIT_RETRY.iter().find(|(n, default, _)| {
                n == name
                    && value.as_deref().is_none_or(|v| {
                        v == *default || v.parse::<f64>().ok() == default.parse::<f64>().ok()
                    })
            });
            match ours {
                Some((_, _, srdp)) => (name.clone(), Some((*srdp).to_string())),
                None => (name.clone(), value.clone()),
            }
        })
        .collect()
}

/// The selected datasets of one attached lake, with what the metadata says about them.
pub struct Lake<'a> {
    conn: &'a Connection,
    spec: &'a AttachSpec,
    meta: MetadataTables,
    /// The latest metadata snapshot srdp's last planning read of this attachment saw (`None`:
    /// unknown); the runner keeps it between calls.
    seen: std::cell::Cell<Option<i64>>,
    /// Snapshots srdp's own steps certainly committed since `seen` (see [`Lake::settle`]).
    own: std::cell::Cell<i64>,
    /// The call's first read (see [`Lake::listing`]).
    listing: std::cell::OnceCell<Listing>,
    /// The caller's [`CALLER_SETTINGS`] for this call (see [`Lake::use_caller_settings`]).
    caller: std::cell::RefCell<Vec<(String, Option<String>)>>,
    /// A SQLite catalog's write lock, held by steps after one lost its commit (see
    /// [`write_lock`]); `None` for other catalogs.
    write_lock: Option<write_lock::WriteLock<'a>>,
}

/// What the first read of a call says about the catalog ([`MetadataTables::listing`]).
#[derive(Debug, Clone, Default)]
struct Listing {
    /// Live datasets, in (schema, table) order.
    datasets: Vec<Dataset>,
    /// Live schema names, in order.
    schemas: Vec<String>,
    /// DuckLake's registry of inlined insertion tables: `table_id, table_name`.
    registry: Vec<(i64, String)>,
    auto_compact: Vec<AutoCompactOption>,
    /// Every `target_file_size` option, at any scope.
    target_sizes: Vec<String>,
    latest: Option<i64>,
}

/// Inlined insertion records of one dataset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Inlined {
    pub rows: i64,
    pub tables: i64,
}

/// How a step's statement runs on the runner (see [`run_in_one_transaction`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepMode<'a> {
    /// One autocommit statement.
    Autocommit,
    /// `BEGIN TRANSACTION`, `before` (the `CALL ... set_commit_message` that labels the
    /// snapshot with srdp's author, [`crate::audit::MAINTENANCE_AUTHOR`], and for an explicit
    /// step the `auto_compact = true` at the scope that holds the `false`), the step's statement
    /// bound and executed, `after` (the `auto_compact = false` back, or nothing), `COMMIT`.
    BoundInOneTransaction {
        before: &'a str,
        after: &'a str,
        /// The step flips `auto_compact`: after a failed attempt the catalog is re-attached,
        /// because DuckLake keeps the flipped value in memory after a ROLLBACK.
        flips: bool,
        /// How the step uses a SQLite catalog's write lock once a step of the call lost its
        /// commit ([`write_lock`]).
        lock: LockUse,
    },
}

/// How a step uses a SQLite catalog's write lock after a lost commit ([`write_lock`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockUse {
    /// Held from before the statement until right before its `COMMIT`: a merge writes the
    /// metadata only at its commit.
    HoldUntilCommit,
    /// Held for a moment and released right before the statement: a flush deletes the inlined
    /// rows it wrote out during its statement, which a held lock would refuse. The writers
    /// that met the held lock back off, and the flush runs in the gap they leave.
    ClearBeforeStatement,
}

/// What a flush step did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flushed {
    /// Physical inlined rows written out.
    pub rows: i64,
    /// Inline deletion markers written to a delete file.
    pub markers: i64,
    pub attempts: u32,
}

/// The outcome of a step that may have been retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stepped<T> {
    pub value: T,
    pub attempts: u32,
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
    fn committed_one(&self) {
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

    /// Gives srdp's connection the caller's values of [`CALLER_SETTINGS`] for this call (read in
    /// bind; `None` = the setting's default), DuckLake's default commit retry replaced by srdp's
    /// ([`step_settings`]). Every call sets all of them, so nothing of one caller's session
    /// carries over to another caller.
    pub fn use_caller_settings(&self, settings: &[(String, Option<String>)]) -> Result<()> {
        let settings = step_settings(settings);
        self.apply_settings(&settings)?;
        *self.caller.borrow_mut() = settings;
        Ok(())
    }

    /// Sets each of `settings` for srdp's connection (`None`: the setting's default).
    fn apply_settings(&self, settings: &[(String, Option<String>)]) -> Result<()> {
        for (name, value) in settings {
            let statement = sql::session_setting(
                &Ident::new(name),
                value.as_deref().map(Literal::new).as_ref(),
            );
            self.conn.execute_batch(&statement).map_err(|e| {
                SrdpError::duckdb(
                    format!(
                        "applying the caller's setting {name} = {} to srdp's connection failed",
                        value.as_deref().unwrap_or("(default)")
                    ),
                    e,
                )
            })?;
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

    fn read<T>(
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
    fn listing(&self) -> Result<&Listing> {
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
                ("auto_compact", scope_id, scope, _, Some(value)) => {
                    listing.auto_compact.push(AutoCompactOption {
                        scope,
                        scope_id,
                        value,
                    })
                }
                ("target_file_size", _, _, _, Some(value)) => listing.target_sizes.push(value),
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
                    for (id, n) in counts {
                        let entry = out.entry(id).or_default();
                        entry.rows += n;
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

    /// Physical rows of each of `registry`'s inlined tables: `table_id, rows` (see
    /// [`Lake::count_rows`]).
    fn count_inlined(&self, registry: &[(i64, String)]) -> Result<Vec<(i64, i64)>> {
        self.count_rows(registry, &self.meta.inlined_counts(registry))
    }

    /// `table_id, rows` of each of the metadata tables `tables` (`table_id, table name`). On a
    /// SQLite or PostgreSQL catalog the catalog database runs the union itself (see
    /// [`MetadataTables::inlined_counts_in_catalog_db`]); should that fail, DuckDB runs
    /// `fallback`, the same union over its catalog of the metadata, as on a DuckDB-file catalog.
    fn count_rows(&self, tables: &[(i64, String)], fallback: &str) -> Result<Vec<(i64, i64)>> {
        let row = |r: &duckdb::Row| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?));
        let pushed = match self.spec.backend {
            "sqlite" => Some(("sqlite_query", None)),
            "postgres" => Some(("postgres_query", Some(self.spec.metadata_schema.as_str()))),
            _ => None,
        };
        if let Some((function, schema)) = pushed {
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

    /// [`Lake::read`] bound and executed in one transaction. `sqlite_query` keeps the SQLite
    /// connection of the transaction that bound it, which an autocommit prepare closes before
    /// the statement executes (the execution then fails with SQLite's "out of memory").
    fn read_in_one_transaction<T>(
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

    /// Every `auto_compact` option of the catalog (from the call's first read).
    pub fn auto_compact_options(&self) -> Result<Vec<AutoCompactOption>> {
        Ok(self.listing()?.auto_compact.clone())
    }

    /// Every `target_file_size` option of the catalog (from the call's first read).
    pub fn target_size_options(&self) -> Result<Vec<String>> {
        Ok(self.listing()?.target_sizes.clone())
    }

    /// The latest snapshot the call's first read saw.
    pub fn listed_snapshot(&self) -> Result<Option<i64>> {
        Ok(self.listing()?.latest)
    }

    /// Runs one maintenance statement for `dataset` with srdp's retry policy.
    pub fn step<T>(
        &self,
        dataset: &Dataset,
        step: &str,
        mode: StepMode,
        statement: &str,
        done: &[String],
        row: impl Fn(&duckdb::Row) -> duckdb::Result<T>,
    ) -> Result<Stepped<T>> {
        let policy = self.spec.retry;
        let started = Instant::now();
        let mut jitter = Jitter::from_clock();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let outcome = match mode {
                StepMode::BoundInOneTransaction {
                    before,
                    after,
                    lock: use_lock,
                    ..
                } => {
                    let deadline = started + policy.max_retry;
                    let lock = self.write_lock.as_ref().filter(|l| l.wanted());
                    let held = match (lock, use_lock) {
                        (None, _) => Ok(None),
                        (Some(l), LockUse::HoldUntilCommit) => l.take(deadline).map(|()| Some(l)),
                        (Some(l), LockUse::ClearBeforeStatement) => {
                            l.clear_the_way(deadline).map(|()| None)
                        }
                    };
                    held.and_then(|held| {
                        run_in_one_transaction(self.conn, before, statement, after, held, &row)
                            .map_err(|e| e.to_string())
                    })
                }
                StepMode::Autocommit => self
                    .conn
                    .query_row(statement, [], &row)
                    .map_err(|e| e.to_string()),
            };
            if outcome.is_err()
                && matches!(mode, StepMode::BoundInOneTransaction { flips: true, .. })
            {
                crate::runner::reattach(self.conn, self.spec)?;
            }
            let message = match outcome {
                Ok(value) => {
                    return Ok(Stepped {
                        value,
                        attempts: attempt,
                    });
                }
                Err(e) => crate::redact::redact(&e),
            };
            if let Some(lock) = &self.write_lock {
                lock.note_failure(&message);
            }
            let class = plan::classify(&message);
            let wait = (class == Failure::Retryable)
                .then(|| policy.next_wait(attempt, started.elapsed(), jitter.draw()))
                .flatten();
            match class {
                Failure::Retryable if wait.is_some() => {
                    std::thread::sleep(wait.unwrap_or_default());
                }
                Failure::StaleInlinedTable => {
                    return Err(SrdpError::StaleCatalog {
                        catalog: self.spec.catalog.clone(),
                        doing: format!("trying to {step} dataset '{}'", dataset.name()),
                        message,
                        outcome: String::new(),
                    })
                }
                _ => {
                    return Err(SrdpError::MaintenanceFailed {
                        dataset: dataset.name(),
                        step: step.to_string(),
                        attempts: attempt,
                        retried: if attempt > 1 {
                            format!(
                                " Retried for {:.1} s; the budget is max_retry_seconds = {} and max_attempts = {} in srdp.toml.",
                                started.elapsed().as_secs_f64(),
                                policy.max_retry.as_secs(),
                                policy.max_attempts
                            )
                        } else {
                            String::new()
                        },
                        message,
                        done: if done.is_empty() {
                            "none".into()
                        } else {
                            done.join(", ")
                        },
                    })
                }
            }
        }
    }

    /// The `CALL ... set_commit_message` that labels a maintenance step's snapshot with srdp's
    /// author and `message`.
    fn label(&self, message: &str) -> String {
        sql::set_commit_message(
            &Ident::new(&self.spec.alias),
            &Literal::new(crate::audit::MAINTENANCE_AUTHOR),
            &Literal::new(message),
        )
    }

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

    /// Merges one dataset's adjacent small files; returns (files processed, files created). A
    /// merge that processed files counts as srdp's own commit.
    pub fn merge(
        &self,
        dataset: &Dataset,
        explicit: Option<OptionScope>,
        done: &[String],
    ) -> Result<Stepped<(i64, i64)>> {
        let statement = sql::merge(
            &Literal::new(&self.spec.alias),
            &Literal::new(&dataset.schema),
            &Literal::new(&dataset.table),
        );
        let message = format!("srdp_compact: merge {}", dataset.name());
        let step = self.labelled_step(
            dataset,
            "merge",
            &message,
            explicit,
            &statement,
            LockUse::HoldUntilCommit,
            done,
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        if step.value.0 > 0 {
            self.committed_one();
        }
        Ok(step)
    }

    /// A flush or merge `statement`, in one transaction bracketed by [`Lake::bracket`], with
    /// srdp's retry policy.
    #[allow(clippy::too_many_arguments)]
    fn labelled_step<T>(
        &self,
        dataset: &Dataset,
        step: &str,
        message: &str,
        explicit: Option<OptionScope>,
        statement: &str,
        lock: LockUse,
        done: &[String],
        row: impl Fn(&duckdb::Row) -> duckdb::Result<T>,
    ) -> Result<Stepped<T>> {
        let (before, after) = self.bracket(message, dataset, explicit);
        self.step(
            dataset,
            step,
            StepMode::BoundInOneTransaction {
                before: &before,
                after: &after,
                flips: explicit.is_some(),
                lock,
            },
            statement,
            done,
            row,
        )
    }

    /// What a maintenance step runs before and after its statement, in its transaction: the
    /// commit label; for an explicit step on a dataset DuckLake skips, `auto_compact = true` at
    /// the scope that holds the `false`, and `false` again after the statement. DuckLake 1.0
    /// skips such a dataset even when it is named, with no parameter to force it; set and reset
    /// in one transaction, the option rows of `ducklake_metadata` are exactly as before and the
    /// only new snapshot is the step's (`test_explicit_compaction.py`).
    fn bracket(
        &self,
        message: &str,
        dataset: &Dataset,
        explicit: Option<OptionScope>,
    ) -> (String, String) {
        let label = self.label(message);
        let Some(scope) = explicit else {
            return (label, String::new());
        };
        let set = |value| {
            sql::set_auto_compact(
                &Ident::new(&self.spec.alias),
                value,
                scope,
                &Literal::new(&dataset.schema),
                &Literal::new(&dataset.table),
            )
        };
        (format!("{label}; {}", set(true)), set(false))
    }
}

impl Lake<'_> {
    /// What the write audit reads: the snapshots from `min_id` on, every version of every
    /// table, view and schema, and the live schema names.
    pub fn audit_history(
        &self,
        min_id: i64,
    ) -> Result<(Vec<audit::Snapshot>, Vec<audit::Version>, Vec<String>)> {
        let queries = audit::AuditQueries::new(&self.spec.alias, &self.spec.metadata_schema);
        let snapshots = self.read(&queries.snapshots(min_id), |r| {
            Ok(audit::Snapshot {
                id: r.get(0)?,
                time: r.get(1)?,
                author: r.get(2)?,
                message: r.get(3)?,
                changes: r.get(4)?,
            })
        })?;
        let versions = self
            .read(&queries.versions(), |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    audit::Version {
                        kind: audit::ObjectKind::Table,
                        id: r.get(1)?,
                        name: r.get(2)?,
                        schema_id: r.get(3)?,
                        begin: r.get(4)?,
                    },
                ))
            })?
            .into_iter()
            .filter_map(|(kind, v)| {
                audit::ObjectKind::parse(&kind).map(|kind| audit::Version { kind, ..v })
            })
            .collect();
        let schemas = self.read(&self.meta.schemas(), |r| r.get::<_, String>(0))?;
        Ok((snapshots, versions, schemas))
    }

    /// A `since :=` timestamp in microseconds since the epoch, `None` if DuckDB cannot read it.
    pub fn timestamp_micros(&self, text: &str) -> Result<Option<i64>> {
        let rows = self.read(&audit::timestamp_micros(&Literal::new(text)), |r| {
            r.get::<_, Option<i64>>(0)
        })?;
        Ok(rows.into_iter().next().flatten())
    }

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

/// Runs the merge statement so that it is bound and executed in the same transaction.
///
/// duckdb-rs prepares a statement and then executes it; on an autocommit connection those are
/// two transactions. DuckLake 1.0 plans `ducklake_merge_adjacent_files` when the statement is
/// bound, and its commit checks for conflicts only against snapshots newer than the executing
/// transaction, so a merge committed by another process between the two is not seen: both
/// merges commit and the rows of the merged files are duplicated (reproduced with two srdp
/// maintainers on one SQLite catalog, and with `PREPARE`/`EXECUTE` in plain SQL). Inside one
/// explicit transaction the same race fails with DuckLake's "another transaction has compacted
/// it" conflict, which srdp retries. A failed statement or commit leaves no transaction open.
/// Flushes run the same way: bound and executed apart, DuckLake 1.0 commits a flush of inline
/// deletion markers and inlined rows as two snapshots (the plain call makes one). Inside the
/// transaction, a failure of DuckLake's first metadata query (PostgreSQL's missing inlined table)
/// can surface as "Current transaction is aborted"; [`plan::classify`] reads that as the stale
/// catalog it is. Deletes stay autocommit. Each labelled step carries srdp's commit author and
/// message (`label`, run right after `BEGIN`; a step that changes nothing commits no snapshot).
fn run_in_one_transaction<T>(
    conn: &Connection,
    before: &str,
    statement: &str,
    after: &str,
    lock: Option<&write_lock::WriteLock>,
    row: impl FnOnce(&duckdb::Row) -> duckdb::Result<T>,
) -> duckdb::Result<T> {
    if let Err(e) = conn.execute_batch("BEGIN TRANSACTION") {
        if let Some(lock) = lock {
            lock.release();
        }
        return Err(e);
    }
    let outcome = conn
        .execute_batch(before)
        .and_then(|()| conn.query_row(statement, [], row))
        .and_then(|value| {
            if after.is_empty() {
                Ok(value)
            } else {
                conn.execute_batch(after).map(|()| value)
            }
        })
        .and_then(|value| {
            // The lock is released right before the commit, which needs it.
            if let Some(lock) = lock {
                lock.release();
            }
            conn.execute_batch("COMMIT").map(|()| value)
        });
    if let Some(lock) = lock {
        lock.release();
    }
    if outcome.is_err() {
        // A failed statement leaves the transaction open and aborted, a failed COMMIT may too;
        // when there is none, ROLLBACK fails harmlessly ("no transaction is active").
        let _ = conn.execute_batch("ROLLBACK");
    }
    outcome
}

/// Milliseconds since `start`, as a BIGINT.
pub fn elapsed_ms(start: Instant) -> i64 {
    i64::try_from(start.elapsed().as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn given(values: &[(&str, Option<&str>)]) -> Vec<(String, Option<String>)> {
        values
            .iter()
            .map(|(n, v)| ((*n).to_string(), v.map(str::to_string)))
            .collect()
    }

    #[test]
    fn duckdbs_default_commit_retry_becomes_srdps_for_a_step() {
        let caller = given(&[
            ("ducklake_target_file_size", Some("1MB")),
            ("ducklake_max_retry_count", Some("10")),
            ("ducklake_retry_wait_ms", None),
            ("ducklake_retry_backoff", Some("1.50")),
        ]);
        assert_eq!(
            step_settings(&caller),
            given(&[
                ("ducklake_target_file_size", Some("1MB")),
                ("ducklake_max_retry_count", Some("1000")),
                ("ducklake_retry_wait_ms", Some("10")),
                ("ducklake_retry_backoff", Some("1")),
            ])
        );
    }

    #[test]
    fn a_callers_own_commit_retry_is_kept() {
        let caller = given(&[
            ("ducklake_max_retry_count", Some("3")),
            ("ducklake_retry_wait_ms", Some("250")),
            ("ducklake_retry_backoff", Some("2")),
        ]);
        assert_eq!(step_settings(&caller), caller);
    }
}
