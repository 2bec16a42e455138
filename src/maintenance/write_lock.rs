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
//! writers keep at least two thirds of the time beside one maintainer. A maintainer knows only
//! its own holds, so two of them used to hand the lock to each other: one polled while the other
//! held it and took it the moment it was released, before the writers (backing off after the
//! held lock refused them) came back; writers kept a third of the time beside two maintainers
//! taking turns, and nothing beside three. So a take that found the lock held for longer than
//! [`OTHERS_HOLD_MS`] (longer than a writer's commit holds it: another maintainer's hold) lets it
//! go the moment it gets it and waits [`YIELD_FACTOR`] times that long first, once per take (so
//! writers committing back to back cannot keep a maintainer from the lock for good).
//!
//! Rooms: [`Holds`] decides (when to wait, how long to hold, when to give up), on a clock it is
//! given, so its decisions are unit-tested without timing; [`WriteLock`] carries them out on a
//! [`LockStore`] (srdp's lock connection, [`SqliteLock`]) and a [`Clock`] (the system's).

use crate::sql::{Ident, Literal};
use duckdb::Connection;
use std::cell::{Cell, RefCell};
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
/// A take that found the lock held at least this long met another maintainer's hold (a writer's
/// commit holds it for a few milliseconds): it yields [`YIELD_FACTOR`] times as long before
/// taking it.
pub const OTHERS_HOLD_MS: u64 = 50;

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

/// The wait a take owes the writers after finding the lock held by someone else for `busy`:
/// [`YIELD_FACTOR`] times that, when it was at least [`OTHERS_HOLD_MS`] (`None`: a writer's
/// commit, no wait).
pub fn yield_after_others(busy: Duration) -> Option<Duration> {
    (busy >= Duration::from_millis(OTHERS_HOLD_MS)).then(|| busy * YIELD_FACTOR)
}

/// The pause between two tries of a busy lock: [`POLL_MS`] times `0.5 + draw` (`draw` in
/// `[0, 1)`), so pollers do not try in step.
pub fn poll_pause(draw: f64) -> Duration {
    Duration::from_millis(POLL_MS).mul_f64(0.5 + draw)
}

/// What a call's write lock decides, on the instants it is given: pure, so each decision is
/// unit-tested without timing.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Holds {
    /// A step of this call lost its commit to another writer: later attempts hold the lock.
    contended: bool,
    /// When the lock was taken, while it is held.
    taken: Option<Instant>,
    /// The last hold: how long, and when it was released.
    last: Option<(Duration, Instant)>,
    /// Flushes of this call the lock cleared the way for ([`clear_hold`]).
    clears: u32,
}

/// What a take does after a try of the lock failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Busy {
    /// Try again after this pause.
    Poll(Duration),
    /// Give up with this message.
    GiveUp(String),
}

impl Holds {
    /// Records a failed attempt of a step; after a lost commit, later attempts hold the lock.
    pub fn note_failure(&mut self, message: &str) {
        if lost_commit(message) {
            self.contended = true;
        }
    }

    /// Whether the next attempt holds the lock.
    pub fn wanted(&self) -> bool {
        self.contended
    }

    /// Whether the lock is held now.
    pub fn held(&self) -> bool {
        self.taken.is_some()
    }

    /// The wait owed before a take starting at `now`: [`yield_for`] of the last hold.
    pub fn wait_before_take(&self, now: Instant) -> Option<Duration> {
        let (held, released) = self.last?;
        yield_for(held, now.saturating_duration_since(released))
    }

    /// After a try at `now` failed with `message`: poll again after a pause from `draw` (cut at
    /// `deadline`), or give up (not a busy lock, or at `deadline`), with the message the step's
    /// retry policy reads.
    pub fn after_failed_try(
        &self,
        message: &str,
        now: Instant,
        deadline: Instant,
        draw: f64,
    ) -> Busy {
        if !lost_commit(message) || now >= deadline {
            return Busy::GiveUp(format!(
                "srdp could not take the catalog's write lock for the step: {message}"
            ));
        }
        Busy::Poll(poll_pause(draw).min(deadline.saturating_duration_since(now)))
    }

    /// Records the lock taken at `now`.
    pub fn took(&mut self, now: Instant) {
        self.taken = Some(now);
    }

    /// Records the lock released at `now`; whether it was held (so the release must run).
    pub fn released(&mut self, now: Instant) -> bool {
        match self.taken.take() {
            Some(taken) => {
                self.last = Some((now.saturating_duration_since(taken), now));
                true
            }
            None => false,
        }
    }

    /// The hold before this call's next flush ([`clear_hold`]), counted.
    pub fn next_clear_hold(&mut self) -> Duration {
        let hold = clear_hold(self.clears);
        self.clears = self.clears.saturating_add(1);
        hold
    }
}

/// Where the lock is taken and released: srdp's lock connection ([`SqliteLock`]).
pub trait LockStore {
    /// Attaches the catalog's metadata file (once per call, before the first try).
    fn attach(&self) -> Result<(), String>;
    /// One try: begins a transaction and takes the write lock; on failure the transaction is
    /// rolled back and the message returned (`database is locked` while another holds it).
    fn try_take(&self) -> Result<(), String>;
    /// Releases a held lock (a `ROLLBACK` of the empty write).
    fn release(&self);
    /// Detaches the metadata file.
    fn detach(&self);
}

/// Time for the lock: the system's ([`SystemClock`]).
pub trait Clock {
    fn now(&self) -> Instant;
    fn sleep(&self, duration: Duration);
}

/// The system clock.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn sleep(&self, duration: Duration) {
        std::thread::sleep(duration);
    }
}

/// The write lock of a SQLite catalog's metadata file, on srdp's lock connection.
pub struct SqliteLock<'a> {
    conn: &'a Connection,
    file: &'a Path,
    alias: String,
}

impl LockStore for SqliteLock<'_> {
    fn attach(&self) -> Result<(), String> {
        self.conn
            .execute_batch(&attach_sql(self.file, &self.alias))
            .map_err(|e| {
                format!(
                    "srdp could not attach the catalog's metadata file to take its write lock: {e}"
                )
            })
    }

    fn try_take(&self) -> Result<(), String> {
        let take = take_sql(&self.alias);
        let attempt = self
            .conn
            .execute_batch("BEGIN TRANSACTION")
            .and_then(|()| self.conn.query_row(&take, [], |_| Ok(())));
        attempt.map_err(|e| {
            let _ = self.conn.execute_batch("ROLLBACK");
            e.to_string()
        })
    }

    fn release(&self) {
        let _ = self.conn.execute_batch("ROLLBACK");
    }

    fn detach(&self) {
        let _ = self.conn.execute_batch(&detach_sql(&self.alias));
    }
}

/// The write lock of one SQLite catalog for one call: [`Holds`]' decisions carried out on a
/// [`LockStore`] and a [`Clock`].
pub struct WriteLock<'a> {
    store: Box<dyn LockStore + 'a>,
    clock: Box<dyn Clock + 'a>,
    holds: RefCell<Holds>,
    /// The metadata file is attached (only `DETACH` then).
    attached: Cell<bool>,
    jitter: RefCell<crate::retry::Jitter>,
}

impl<'a> WriteLock<'a> {
    /// The lock of the metadata file `file` of catalog `catalog_alias`, on srdp's lock
    /// connection `conn`, on the system clock.
    pub fn new(conn: &'a Connection, file: &'a Path, catalog_alias: &str) -> Self {
        let store = SqliteLock {
            conn,
            file,
            alias: alias(catalog_alias),
        };
        WriteLock::with(store, SystemClock, crate::retry::Jitter::from_clock())
    }

    /// The lock on `store` and `clock`, polling with `jitter`'s draws.
    pub fn with(
        store: impl LockStore + 'a,
        clock: impl Clock + 'a,
        jitter: crate::retry::Jitter,
    ) -> Self {
        WriteLock {
            store: Box::new(store),
            clock: Box::new(clock),
            holds: RefCell::new(Holds::default()),
            attached: Cell::new(false),
            jitter: RefCell::new(jitter),
        }
    }

    /// Records a failed attempt; after a lost commit, later attempts hold the lock.
    pub fn note_failure(&self, message: &str) {
        self.holds.borrow_mut().note_failure(message);
    }

    /// Whether the next attempt holds the lock.
    pub fn wanted(&self) -> bool {
        self.holds.borrow().wanted()
    }

    /// Takes the lock, polling until `deadline`: first waits out [`yield_for`] its last hold;
    /// when the lock was held by another for long ([`yield_after_others`]), lets it go at once
    /// and waits that long before taking it (once). The error says why it could not (a message
    /// with `database is locked` when another writer kept it, so the step's retry policy
    /// decides what happens next).
    pub fn take(&self, deadline: Instant) -> Result<(), String> {
        let wait = self.holds.borrow().wait_before_take(self.clock.now());
        if let Some(wait) = wait {
            self.sleep_until(wait, deadline);
        }
        if !self.attached.get() {
            self.store.attach()?;
            self.attached.set(true);
        }
        let mut busy_since: Option<Instant> = None;
        let mut yielded = false;
        loop {
            match self.store.try_take() {
                Ok(()) => {
                    let now = self.clock.now();
                    let owed = busy_since
                        .filter(|_| !yielded)
                        .and_then(|since| yield_after_others(now.saturating_duration_since(since)));
                    if let Some(wait) = owed {
                        self.store.release();
                        (yielded, busy_since) = (true, None);
                        self.sleep_until(wait, deadline);
                        continue;
                    }
                    self.holds.borrow_mut().took(now);
                    return Ok(());
                }
                Err(message) => {
                    let now = self.clock.now();
                    let draw = self.jitter.borrow_mut().draw();
                    match self
                        .holds
                        .borrow()
                        .after_failed_try(&message, now, deadline, draw)
                    {
                        Busy::GiveUp(error) => return Err(error),
                        Busy::Poll(pause) => {
                            busy_since.get_or_insert(now);
                            self.clock.sleep(pause);
                        }
                    }
                }
            }
        }
    }

    /// Clears the way for a flush: takes the lock, holds it for [`clear_hold`] (cut at
    /// `deadline`) while writers fail their commits and back off, and releases it, so the flush
    /// that follows at once finds no writer about to commit.
    pub fn clear_the_way(&self, deadline: Instant) -> Result<(), String> {
        self.take(deadline)?;
        let hold = self.holds.borrow_mut().next_clear_hold();
        self.sleep_until(hold, deadline);
        self.release();
        Ok(())
    }

    /// Releases the lock if it is held (a `ROLLBACK` of the empty write; the metadata file stays
    /// attached for the call's next hold); safe to call again.
    pub fn release(&self) {
        let now = self.clock.now();
        if self.holds.borrow_mut().released(now) {
            self.store.release();
        }
    }

    /// Sleeps `wait`, cut at `deadline`.
    fn sleep_until(&self, wait: Duration, deadline: Instant) {
        let left = deadline.saturating_duration_since(self.clock.now());
        let wait = wait.min(left);
        if !wait.is_zero() {
            self.clock.sleep(wait);
        }
    }

    /// Detaches the metadata file if this lock attached it (a call that never took the lock
    /// runs nothing here).
    fn detach(&self) {
        if self.attached.replace(false) {
            self.store.detach();
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
mod tests;
