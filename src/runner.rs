//! The runner connection: the one place where srdp executes SQL.
//!
//! It is opened in the entrypoint (a connection opened after LOAD is a use-after-free in DuckDB
//! 1.5.x) and kept for the life of the database. One `Mutex` serialises everything srdp runs,
//! and also guards the record of which aliases srdp attached with which statement, so that an
//! attach of the same definition is a no-op and a different one under that alias is refused.
//! `ATTACH`/`DETACH` on the runner are database-wide: the caller sees the result from its next
//! statement on.

use crate::attach::{self, AttachSpec, Role};
use crate::error::{Result, SrdpError};
use crate::maintenance::Lake;
use crate::sql::{self, Literal};
use duckdb::Connection;
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Longest time a re-attach keeps trying before it reports the catalog detached.
const REATTACH_BUDGET: Duration = Duration::from_secs(30);

/// What an attach call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttachStatus {
    Attached,
    AlreadyAttached,
    Reattached,
}

impl AttachStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            AttachStatus::Attached => "attached",
            AttachStatus::AlreadyAttached => "already attached",
            AttachStatus::Reattached => "re-attached",
        }
    }
}

/// Why an attach under an alias srdp already attached differently is refused: only the role
/// differs (the same catalog as writer, then as reader), or the definition does.
pub fn already_attached(previous: &AttachSpec, spec: &AttachSpec) -> String {
    let (alias, catalog, was) = (&spec.alias, &previous.catalog, previous.role.as_str());
    if previous.catalog == spec.catalog && previous.role != spec.role {
        let wanted = spec.role.as_str();
        format!(
            "alias '{alias}' is already attached as catalog '{catalog}' with role '{was}', and this \
             call asks for role '{wanted}'; pass refresh := true to re-attach it as {wanted}, or \
             pass another alias := '...' to attach it as {wanted} beside the {was}"
        )
    } else {
        format!(
            "alias '{alias}' is already attached as catalog '{catalog}' ({was}) with another \
             definition; pass refresh := true to re-attach it as defined now, or pass another \
             alias := '...'"
        )
    }
}

struct Inner {
    conn: Connection,
    /// srdp's second connection, which holds a SQLite catalog's write lock around a maintenance
    /// step (see [`crate::maintenance::write_lock`]); opened in the entrypoint with `conn`.
    lock_conn: Connection,
    /// Keyed by lower-case alias (DuckDB resolves database names case-insensitively).
    attached: BTreeMap<String, AttachSpec>,
    /// Per alias, the latest metadata snapshot srdp saw (at attach, then at each planning
    /// read): a flush by another connection after it may have left this instance a stale list
    /// of inlined tables, so the planner flushes those datasets (see `maintenance::planner`).
    seen: BTreeMap<String, i64>,
}

/// The runner connection and what srdp attached through it.
pub struct Runner {
    inner: Mutex<Inner>,
}

impl Runner {
    pub fn new(conn: Connection, lock_conn: Connection) -> Self {
        Runner {
            inner: Mutex::new(Inner {
                conn,
                lock_conn,
                attached: BTreeMap::new(),
                seen: BTreeMap::new(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave the connection half-used in a way that a
        // later statement would trip over, so a poisoned lock is still usable.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Attaches `spec` (see [`AttachStatus`] for the outcomes).
    pub fn attach(&self, spec: &AttachSpec, refresh: bool) -> Result<AttachStatus> {
        let mut inner = self.lock();
        let key = spec.alias.to_lowercase();
        let present = inner.count(&sql::database_exists(&Literal::new(&spec.alias)))? > 0;
        if !present {
            inner.attached.remove(&key);
        }
        match (present, inner.attached.get(&key)) {
            (false, _) => {
                inner.preflight(spec)?;
                inner
                    .attach_retrying(spec)
                    .map_err(|e| inner.explain_reader_failure(spec, e))?;
                inner.attached.insert(key, spec.clone());
                inner.note_seen(spec);
                Ok(AttachStatus::Attached)
            }
            (true, None) => Err(SrdpError::AliasInUse(format!(
                "alias '{}' is already used by a database that srdp did not attach; DETACH it \
                 first or pass another alias := '...'",
                spec.alias
            ))),
            (true, Some(previous)) if !refresh => {
                if previous.sql == spec.sql {
                    Ok(AttachStatus::AlreadyAttached)
                } else {
                    Err(SrdpError::AliasInUse(already_attached(previous, spec)))
                }
            }
            (true, Some(_)) => {
                inner.preflight(spec)?;
                inner.reattach(spec)?;
                inner.attached.insert(key, spec.clone());
                inner.note_seen(spec);
                Ok(AttachStatus::Reattached)
            }
        }
    }

    /// The attachments srdp made that are still attached.
    pub fn attachments(&self) -> Result<Vec<AttachSpec>> {
        self.lock().live()
    }

    /// Runs `work` on the lake srdp attached for `catalog`, holding the runner for the whole
    /// call (this also serialises maintenance in the process). `writer_for` names what needs
    /// the writer role, if anything does. When `work` meets a stale inlined-data table, the
    /// catalog is re-attached from its definition before the error is returned.
    pub fn with_lake<T>(
        &self,
        catalog: &str,
        writer_for: Option<&str>,
        work: impl FnOnce(&Lake) -> Result<T>,
    ) -> Result<T> {
        self.with_lake_connection(catalog, writer_for, |lake, _, _| work(lake))
    }

    /// [`Runner::with_lake`], with the runner connection and the attachment handed to `work`
    /// too, for reads of a lake that [`Lake`] does not offer (the write audit's row checks,
    /// [`crate::audit::RowCheck`]).
    pub fn with_lake_connection<T>(
        &self,
        catalog: &str,
        writer_for: Option<&str>,
        work: impl FnOnce(&Lake, &Connection, &AttachSpec) -> Result<T>,
    ) -> Result<T> {
        let mut inner = self.lock();
        let spec = inner.lake(catalog, writer_for)?;
        let key = spec.alias.to_lowercase();
        let lake = Lake::new(&inner.conn, &spec)
            .with_seen(inner.seen.get(&key).copied())
            .with_write_lock(&inner.lock_conn);
        let result = work(&lake, &inner.conn, &spec);
        let seen = lake.seen();
        drop(lake);
        if let Some(seen) = seen {
            inner.seen.insert(key, seen);
        }
        match result {
            Err(SrdpError::StaleCatalog {
                catalog,
                doing,
                message,
                ..
            }) => {
                let outcome = match inner.reattach(&spec) {
                    Ok(()) => {
                        inner.note_seen(&spec);
                        format!(
                            "srdp re-attached '{}' from the definition; run the call again",
                            spec.alias
                        )
                    }
                    // DuckLake's internal error on a PostgreSQL catalog invalidates the whole
                    // DuckDB database: nothing in this process can heal it.
                    Err(e) if e.to_string().contains("database has been invalidated") => format!(
                        "DuckDB invalidated this database after that error, so srdp could not \
                         re-attach '{}': close every connection of this process (or restart it) \
                         and run the call again in a new database",
                        spec.alias
                    ),
                    Err(e) => e.to_string(),
                };
                Err(SrdpError::StaleCatalog {
                    catalog,
                    doing,
                    message,
                    outcome,
                })
            }
            other => other,
        }
    }
}

impl Inner {
    fn live(&mut self) -> Result<Vec<AttachSpec>> {
        let mut live = Vec::new();
        let aliases: Vec<String> = self.attached.keys().cloned().collect();
        for alias in aliases {
            if self.count(&sql::database_exists(&Literal::new(&alias)))? > 0 {
                live.push(self.attached[&alias].clone());
            } else {
                self.attached.remove(&alias);
            }
        }
        Ok(live)
    }

    /// Records the catalog's latest snapshot as seen by `spec`'s fresh attachment (nothing is
    /// cached from before it); a failed read leaves it unknown.
    fn note_seen(&mut self, spec: &AttachSpec) {
        let key = spec.alias.to_lowercase();
        match Lake::new(&self.conn, spec).latest_snapshot() {
            Ok(Some(latest)) => {
                self.seen.insert(key, latest);
            }
            _ => {
                self.seen.remove(&key);
            }
        }
    }

    /// The attachment to work on for `catalog`: the one under the catalog's own name if there
    /// is one, a writer when a writer is needed.
    fn lake(&mut self, catalog: &str, writer_for: Option<&str>) -> Result<AttachSpec> {
        let mut candidates: Vec<AttachSpec> = self
            .live()?
            .into_iter()
            .filter(|s| s.catalog == catalog)
            .collect();
        candidates.sort_by_key(|s| (s.alias != catalog, s.read_only()));
        let Some(first) = candidates.first() else {
            return Err(SrdpError::NotAttached {
                catalog: catalog.to_string(),
                role_hint: if writer_for.is_some() {
                    ", role := 'writer'".into()
                } else {
                    String::new()
                },
            });
        };
        match writer_for {
            None => Ok(first.clone()),
            Some(what) => candidates
                .iter()
                .find(|s| !s.read_only())
                .cloned()
                .ok_or_else(|| SrdpError::ReadOnly {
                    catalog: catalog.to_string(),
                    alias: first.alias.clone(),
                    what: what.to_string(),
                }),
        }
    }

    fn count(&self, query: &str) -> Result<i64> {
        self.conn
            .query_row(query, [], |row| row.get::<_, i64>(0))
            .map_err(|e| SrdpError::duckdb(format!("running `{query}` failed"), e))
    }

    fn execute(&self, statement: &str, spec: &AttachSpec) -> Result<()> {
        self.conn.execute_batch(statement).map_err(|e| {
            let context = format!(
                "attaching catalog '{}' as '{}' ({}) failed",
                spec.catalog,
                spec.alias,
                spec.role.as_str()
            );
            match SrdpError::duckdb(context, e) {
                SrdpError::DuckDb { context, message } => {
                    let message = match crate::plan::attach_hint(&message, spec.secret.as_deref()) {
                        Some(hint) => format!("{}. {hint}", message.trim_end()),
                        None => message,
                    };
                    SrdpError::DuckDb { context, message }
                }
                other => other,
            }
        })
    }

    /// The ATTACH, run again while it fails with a retryable error: two processes whose first
    /// writer attach creates the same new SQLite lake race on DuckLake's initialisation, and the
    /// loser gets `database is locked`; run again, it finds the lake the winner created. A failed
    /// ATTACH attaches nothing, so re-running it is safe.
    fn attach_retrying(&self, spec: &AttachSpec) -> Result<()> {
        let started = Instant::now();
        let mut jitter = crate::retry::Jitter::from_clock();
        let budget = crate::retry::RetryPolicy {
            max_retry: spec.retry.max_retry.min(REATTACH_BUDGET),
            ..spec.retry
        };
        let mut attempt = 0;
        loop {
            attempt += 1;
            let error = match self.execute(&spec.sql, spec) {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            let retryable = matches!(&error, SrdpError::DuckDb { message, .. }
                if crate::plan::classify(message) == crate::plan::Failure::Retryable);
            match budget.next_wait(attempt, started.elapsed(), jitter.draw()) {
                Some(wait) if retryable => std::thread::sleep(wait),
                _ => return Err(error),
            }
        }
    }

    /// A reader's failed ATTACH of a local metadata file that holds no DuckLake catalog becomes
    /// [`SrdpError::LakeNotInitialised`] (DuckLake's own words, "Failed to probe DuckLake
    /// metadata" or "creating a new DuckLake is explicitly disabled", do not say what to do).
    /// Any other failure, and a probe that cannot tell, keep DuckLake's error.
    fn explain_reader_failure(&self, spec: &AttachSpec, error: SrdpError) -> SrdpError {
        let (Role::Reader, Some(file), Some(probe)) =
            (spec.role, &spec.metadata_file, spec.lake_probe())
        else {
            return error;
        };
        // A DuckDB file killed while it was created can be empty, which DuckDB cannot open.
        let empty = std::fs::metadata(file).is_ok_and(|m| m.len() == 0);
        if empty || self.probe_lake(&probe) == Some(0) {
            SrdpError::LakeNotInitialised {
                catalog: spec.catalog.clone(),
                metadata: spec.metadata_display.clone(),
            }
        } else {
            error
        }
    }

    /// Runs a [`attach::LakeProbe`]; `None` when it cannot tell.
    fn probe_lake(&self, probe: &attach::LakeProbe) -> Option<i64> {
        if let Some(before) = &probe.before {
            self.conn.execute_batch(before).ok()?;
        }
        let count = self.count(&probe.count).ok();
        if let Some(after) = &probe.after {
            let _ = self.conn.execute_batch(after);
        }
        count
    }

    /// Checks that can fail before anything changes, and the directories a writer creates.
    fn preflight(&self, spec: &AttachSpec) -> Result<()> {
        if let Some(secret) = &spec.secret {
            if self.count(&sql::secret_exists(&Literal::new(secret)))? == 0 {
                return Err(SrdpError::MissingSecret {
                    catalog: spec.catalog.clone(),
                    role: spec.role.as_str().into(),
                    secret: secret.clone(),
                });
            }
        }
        match (spec.role, &spec.metadata_file) {
            (Role::Reader, Some(file)) if !file.exists() => Err(SrdpError::LakeMissing {
                catalog: spec.catalog.clone(),
                metadata: spec.metadata_display.clone(),
            }),
            (Role::Writer, file) => {
                let mut dirs: Vec<&std::path::Path> = Vec::new();
                if let Some(parent) = file.as_deref().and_then(|f| f.parent()) {
                    dirs.push(parent);
                }
                if !crate::config::is_url(&spec.data_path) {
                    dirs.push(std::path::Path::new(&spec.data_path));
                }
                for dir in dirs {
                    std::fs::create_dir_all(dir).map_err(|e| {
                        SrdpError::duckdb(
                            format!(
                                "creating {} for catalog '{}' failed",
                                dir.display(),
                                spec.catalog
                            ),
                            e,
                        )
                    })?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// See [`reattach`].
    fn reattach(&self, spec: &AttachSpec) -> Result<()> {
        reattach(&self.conn, spec)
    }
}

/// DETACH, then ATTACH with a bounded retry: on a DuckDB-file catalog the ATTACH fails
/// while another connection holds an open transaction on the lake, and the catalog must not
/// be left detached without saying so.
pub fn reattach(conn: &Connection, spec: &AttachSpec) -> Result<()> {
    conn.execute_batch(&spec.detach_sql())
        .map_err(|e| SrdpError::duckdb(format!("detaching '{}' failed", spec.alias), e))?;
    let started = Instant::now();
    let mut jitter = crate::retry::Jitter::from_clock();
    let mut attempt = 0;
    let last = loop {
        attempt += 1;
        let message = match conn.execute_batch(&spec.sql) {
            Ok(()) => return Ok(()),
            Err(e) => crate::redact::redact(&e.to_string()),
        };
        // Bounded by the attempt cap and at most 30 s: a lake must not stay detached for
        // the whole maintenance budget while someone holds a transaction open.
        let budget = crate::retry::RetryPolicy {
            max_retry: spec.retry.max_retry.min(REATTACH_BUDGET),
            ..spec.retry
        };
        match budget.next_wait(attempt, started.elapsed(), jitter.draw()) {
            Some(wait) => std::thread::sleep(wait),
            None => break message,
        }
    };
    Err(SrdpError::DuckDb {
        context: format!(
            "catalog '{}' is now DETACHED from alias '{}': re-attaching failed {} times over {} ms. \
             Another connection probably holds an open transaction on it; commit or roll it \
             back, then call srdp_attach_catalog('{}', refresh := true). Last error",
            spec.catalog,
            spec.alias,
            attempt,
            started.elapsed().as_millis(),
            spec.catalog
        ),
        message: last,
    })
}
