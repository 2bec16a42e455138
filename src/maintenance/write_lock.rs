//! srdp's hold of a SQLite catalog's write lock around a maintenance step that lost its commit.
//!
//! Why a step loses beside busy writers (test_sqlite_commit_contention.py pins each fact):
//!
//! * DuckLake on SQLite runs each transaction's metadata work in one deferred SQLite
//!   transaction: its first read (the snapshot) starts a WAL read transaction, and the commit
//!   later upgrades it to a write transaction.
//! * SQLite refuses that upgrade at once with `SQLITE_BUSY` when another connection committed
//!   after the read began (the read snapshot is stale), and also when another connection holds
//!   the write lock at that moment: SQLite calls the busy handler only for a connection with no
//!   transaction open, so `META_BUSY_TIMEOUT` never applies to a DuckLake commit.
//! * DuckLake 1.0's commit loop retries conflicts, not `database is locked`: the whole step
//!   fails, and srdp runs it again with its Parquet work.
//!
//! A flush or merge takes tens of milliseconds to seconds from its first read to its commit;
//! loaders committing back to back (one commit every ~17 ms with two) land a commit inside
//! nearly every such window, so the step lost every attempt until the loaders stopped.
//!
//! So once a step of a call has lost its commit with `database is locked`, srdp's later attempts
//! in that call take the catalog's write lock: a second connection of srdp's attaches the
//! metadata file through sqlite_scanner without a busy timeout and starts a write transaction
//! (an `UPDATE ... WHERE 0`, which changes nothing), polling every few milliseconds until it gets
//! the lock. Writers that try to commit during a hold get `database is locked` at once, as they
//! do beside any other writer on a SQLite catalog, and retry after their back-off.
//!
//! * A merge writes the metadata only at its commit: srdp holds the lock while the merge works
//!   and releases it (a `ROLLBACK` of the empty write) right before the step's `COMMIT`, so no
//!   other commit can land in between ([`WriteLock::take`]).
//! * A flush deletes the inlined rows it wrote out during its statement, and that write needs
//!   the lock itself (a held lock refuses it, and the flush's first read has already begun its
//!   SQLite transaction, so it cannot wait). srdp holds the lock for a moment before the flush
//!   and releases it right before the statement ([`WriteLock::clear_the_way`]): every writer
//!   that meets the held lock fails its commit at once and backs off (srdp's own retries and the
//!   platform's loaders double their waits), and the flush, whose window from first read to
//!   that delete is a few to a few tens of milliseconds, runs in the gap they leave. A flush that
//!   still loses holds twice as long next time, up to [`CLEAR_MAX_MS`].
//!
//! A call waits [`YIELD_FACTOR`] times as long as it held the lock before taking it again, so
//! writers keep at least two thirds of the time beside one maintainer and half of it beside two
//! (each maintainer knows only its own holds: two that took turns at holding, with a 1.6 s cap
//! and a wait of one hold, locked the writer of `test_concurrency.py` out for its 29 retries,
//! over 6 s, in 4 runs of 4; with these values its longest was 8 retries).

use crate::sql::{Ident, Literal};
use duckdb::Connection;
use std::cell::Cell;
use std::path::Path;
use std::time::{Duration, Instant};

/// Longest pause between two tries to take the lock: writers hold it for a few milliseconds.
pub const POLL_MS: u64 = 5;

/// The first hold before a flush ([`WriteLock::clear_the_way`]): long enough for writers
/// retrying every 10-100 ms to fail a few times and back off past a flush's window.
pub const CLEAR_FIRST_MS: u64 = 100;
/// The longest hold before a flush: the hold doubles each time a flush after one still lost. A
/// longer hold widens no gap: srdp's retries (and the platform's loaders) wait at most
/// [`crate::retry::MAX_RETRY_WAIT_MS`] (250 ms) between attempts, however long they failed.
pub const CLEAR_MAX_MS: u64 = 400;
/// A call waits this many times its last hold before taking the lock again.
pub const YIELD_FACTOR: u32 = 2;

/// The hold before a call's flush when `clears` flushes of the call were cleared for before.
pub fn clear_hold(clears: u32) -> Duration {
    Duration::from_millis((CLEAR_FIRST_MS << clears.min(16)).min(CLEAR_MAX_MS))
}

/// The alias srdp's lock connection attaches a catalog's metadata file under.
pub fn alias(catalog_alias: &str) -> String {
    format!("__srdp_write_lock_{}", catalog_alias.to_lowercase())
}

/// `ATTACH` of the metadata file for the lock: sqlite_scanner, no busy timeout (a busy lock fails
/// at once, and srdp polls).
pub fn attach_sql(file: &Path, lock_alias: &str) -> String {
    format!(
        "ATTACH {} AS {} (TYPE sqlite, BUSY_TIMEOUT 0)",
        Literal::new(&file.display().to_string()),
        Ident::new(lock_alias)
    )
}

/// The statement that takes the write lock inside the lock connection's transaction: a write
/// that changes nothing (`RETURNING`, because `sqlite_query` wants a result).
pub fn take_sql(lock_alias: &str) -> String {
    format!(
        "SELECT count(*) FROM sqlite_query({}, 'UPDATE ducklake_metadata SET key = key WHERE 0 RETURNING key')",
        Literal::new(lock_alias)
    )
}

/// `DETACH` of the lock's attachment.
pub fn detach_sql(lock_alias: &str) -> String {
    format!("DETACH DATABASE IF EXISTS {}", Ident::new(lock_alias))
}

/// Whether a failed step lost its commit to another writer on SQLite.
pub fn lost_commit(message: &str) -> bool {
    message.to_ascii_lowercase().contains("database is locked")
}

/// The wait before taking the lock again: [`YIELD_FACTOR`] times as long as it was held last
/// time, minus the time since it was released (`None`: no wait).
pub fn yield_for(held: Duration, since_release: Duration) -> Option<Duration> {
    (held * YIELD_FACTOR)
        .checked_sub(since_release)
        .filter(|d| !d.is_zero())
}

/// The write lock of one SQLite catalog, on srdp's lock connection.
pub struct WriteLock<'a> {
    conn: &'a Connection,
    file: &'a Path,
    alias: String,
    /// A step of this call lost its commit to another writer: later attempts hold the lock.
    contended: Cell<bool>,
    /// The metadata file is attached on the lock connection (only `DETACH` then).
    attached: Cell<bool>,
    /// When the lock was taken (held now) or the last hold: (taken, released).
    taken: Cell<Option<Instant>>,
    last: Cell<Option<(Duration, Instant)>>,
    /// Flushes of this call the lock cleared the way for ([`clear_hold`]).
    clears: Cell<u32>,
}

impl<'a> WriteLock<'a> {
    pub fn new(conn: &'a Connection, file: &'a Path, catalog_alias: &str) -> Self {
        WriteLock {
            conn,
            file,
            alias: alias(catalog_alias),
            contended: Cell::new(false),
            attached: Cell::new(false),
            taken: Cell::new(None),
            last: Cell::new(None),
            clears: Cell::new(0),
        }
    }

    /// Records a failed attempt; after a lost commit, later attempts hold the lock.
    pub fn note_failure(&self, message: &str) {
        if lost_commit(message) {
            self.contended.set(true);
        }
    }

    /// Whether the next attempt holds the lock.
    pub fn wanted(&self) -> bool {
        self.contended.get()
    }

    /// Takes the lock, polling until `deadline`; the error says why it could not (a message
    /// with `database is locked` when another writer kept it, so the step's retry policy
    /// decides what happens next).
    pub fn take(&self, deadline: Instant) -> Result<(), String> {
        if let Some((held, released)) = self.last.get() {
            if let Some(wait) = yield_for(held, released.elapsed()) {
                std::thread::sleep(wait.min(deadline.saturating_duration_since(Instant::now())));
            }
        }
        if !self.attached.get() {
            self.conn
                .execute_batch(&attach_sql(self.file, &self.alias))
                .map_err(|e| {
                    format!(
                    "srdp could not attach the catalog's metadata file to take its write lock: {e}"
                )
                })?;
            self.attached.set(true);
        }
        let take = take_sql(&self.alias);
        let mut jitter = crate::retry::Jitter::from_clock();
        loop {
            let attempt = self
                .conn
                .execute_batch("BEGIN TRANSACTION")
                .and_then(|()| self.conn.query_row(&take, [], |_| Ok(())));
            match attempt {
                Ok(()) => {
                    self.taken.set(Some(Instant::now()));
                    return Ok(());
                }
                Err(e) => {
                    let _ = self.conn.execute_batch("ROLLBACK");
                    let message = e.to_string();
                    if !lost_commit(&message) || Instant::now() >= deadline {
                        return Err(format!(
                            "srdp could not take the catalog's write lock for the step: {message}"
                        ));
                    }
                    let pause = Duration::from_millis(POLL_MS).mul_f64(0.5 + jitter.draw());
                    std::thread::sleep(pause);
                }
            }
        }
    }

    /// Clears the way for a flush: takes the lock, holds it for [`clear_hold`] (cut at
    /// `deadline`) while writers fail their commits and back off, and releases it, so the flush
    /// that follows at once finds no writer about to commit.
    pub fn clear_the_way(&self, deadline: Instant) -> Result<(), String> {
        self.take(deadline)?;
        let hold = clear_hold(self.clears.get());
        self.clears.set(self.clears.get().saturating_add(1));
        std::thread::sleep(hold.min(deadline.saturating_duration_since(Instant::now())));
        self.release();
        Ok(())
    }

    /// Releases the lock if it is held (a `ROLLBACK` of the empty write; the metadata file stays
    /// attached for the call's next hold); safe to call again.
    pub fn release(&self) {
        if let Some(taken) = self.taken.take() {
            let _ = self.conn.execute_batch("ROLLBACK");
            self.last.set(Some((taken.elapsed(), Instant::now())));
        }
    }

    /// Detaches the metadata file if this lock attached it (a call that never took the lock
    /// runs nothing here).
    fn detach(&self) {
        if self.attached.replace(false) {
            let _ = self.conn.execute_batch(&detach_sql(&self.alias));
        }
    }
}

impl Drop for WriteLock<'_> {
    fn drop(&mut self) {
        self.release();
        self.detach();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_statements() {
        let lock = alias("Lake");
        assert_eq!(lock, "__srdp_write_lock_lake");
        assert_eq!(
            attach_sql(Path::new("/c/it's.sqlite"), &lock),
            "ATTACH '/c/it''s.sqlite' AS \"__srdp_write_lock_lake\" (TYPE sqlite, BUSY_TIMEOUT 0)"
        );
        assert_eq!(
            take_sql(&lock),
            "SELECT count(*) FROM sqlite_query('__srdp_write_lock_lake', 'UPDATE ducklake_metadata SET key = key WHERE 0 RETURNING key')"
        );
        assert_eq!(
            detach_sql(&lock),
            "DETACH DATABASE IF EXISTS \"__srdp_write_lock_lake\""
        );
    }

    #[test]
    fn only_a_lost_commit_asks_for_the_lock() {
        assert!(lost_commit("TransactionContext Error: Failed to commit: Failed to commit DuckLake transaction.\nFailed to flush changes into DuckLake: database is locked"));
        assert!(!lost_commit("Transaction conflict - attempting to compact table with index \"1\" - but another transaction has compacted it"));
    }

    #[test]
    fn the_hold_before_a_flush_doubles_up_to_its_cap() {
        let ms: Vec<u128> = (0..7).map(|c| clear_hold(c).as_millis()).collect();
        assert_eq!(ms, vec![100, 200, 400, 400, 400, 400, 400]);
        assert_eq!(clear_hold(u32::MAX).as_millis(), 400);
    }

    #[test]
    fn a_call_yields_twice_as_long_as_it_held() {
        let ms = Duration::from_millis;
        assert_eq!(yield_for(ms(300), ms(100)), Some(ms(500)));
        assert_eq!(yield_for(ms(300), ms(600)), None);
        assert_eq!(yield_for(ms(300), ms(900)), None);
    }
}
