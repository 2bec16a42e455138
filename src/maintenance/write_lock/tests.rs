//! The lock's statements, its decisions ([`Holds`]) and its take, hold, release and wait logic
//! ([`WriteLock`]) on a scripted lock and a clock that moves only when the lock sleeps, so every
//! wait and every try is asserted to the millisecond without timing luck. The real lock on a real
//! SQLite catalog: test_sqlite_commit_contention.py and test_concurrency.py.

use super::*;
use std::rc::Rc;

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
    let mut holds = Holds::default();
    assert!(!holds.wanted());
    holds.note_failure("Transaction conflict");
    assert!(!holds.wanted());
    holds.note_failure("Failed to flush changes into DuckLake: database is locked");
    assert!(holds.wanted());
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
    // After another's hold: twice as long, from 50 ms (a writer's commit is shorter).
    assert_eq!(yield_after_others(ms(49)), None);
    assert_eq!(yield_after_others(ms(50)), Some(ms(100)));
    assert_eq!(yield_after_others(ms(700)), Some(ms(1400)));
    // Polls 2.5 to 7.5 ms apart.
    assert_eq!(poll_pause(0.0), Duration::from_micros(2500));
    assert!(poll_pause(0.999_999) < Duration::from_micros(7500));
}

// --- a scripted lock on a clock that moves only when the lock sleeps -----------------------

/// The test's time: starts at `t0`, moves by what the lock sleeps (each sleep recorded) and
/// by what the test advances it (the time a step works while it holds the lock).
#[derive(Clone)]
struct TestClock {
    t0: Instant,
    now: Rc<Cell<Instant>>,
    sleeps: Rc<RefCell<Vec<Duration>>>,
}

impl TestClock {
    fn new() -> Self {
        let t0 = Instant::now();
        TestClock {
            t0,
            now: Rc::new(Cell::new(t0)),
            sleeps: Rc::new(RefCell::new(Vec::new())),
        }
    }

    fn at(&self, ms: u64) -> Instant {
        self.t0 + Duration::from_millis(ms)
    }

    fn advance(&self, ms: u64) {
        self.now.set(self.now.get() + Duration::from_millis(ms));
    }

    fn sleeps(&self) -> Vec<Duration> {
        self.sleeps.borrow().clone()
    }
}

impl Clock for TestClock {
    fn now(&self) -> Instant {
        self.now.get()
    }

    fn sleep(&self, duration: Duration) {
        self.sleeps.borrow_mut().push(duration);
        self.now.set(self.now.get() + duration);
    }
}

/// What the lock did, and when (microseconds since `t0`, so jittered polls keep their time).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Event {
    Attach(u128),
    /// A try that found the lock held by someone else.
    Busy(u128),
    Took(u128),
    Release(u128),
    Detach(u128),
}

/// A SQLite write lock that someone else holds during `busy` (ms since `t0`, start inclusive,
/// end exclusive); `error` makes every try fail with another message.
struct ScriptedLock {
    clock: TestClock,
    busy: Vec<(u64, u64)>,
    error: Option<String>,
    attach_error: Option<String>,
    events: Rc<RefCell<Vec<Event>>>,
}

impl ScriptedLock {
    fn new(clock: &TestClock, busy: &[(u64, u64)]) -> (Self, Rc<RefCell<Vec<Event>>>) {
        let events = Rc::new(RefCell::new(Vec::new()));
        let lock = ScriptedLock {
            clock: clock.clone(),
            busy: busy.to_vec(),
            error: None,
            attach_error: None,
            events: events.clone(),
        };
        (lock, events)
    }

    fn us(&self) -> u128 {
        self.clock
            .now()
            .saturating_duration_since(self.clock.t0)
            .as_micros()
    }
}

impl LockStore for ScriptedLock {
    fn attach(&self) -> Result<(), String> {
        if let Some(error) = &self.attach_error {
            return Err(error.clone());
        }
        self.events.borrow_mut().push(Event::Attach(self.us()));
        Ok(())
    }

    fn try_take(&self) -> Result<(), String> {
        if let Some(error) = &self.error {
            return Err(error.clone());
        }
        let now = self.clock.now();
        if self
            .busy
            .iter()
            .any(|(from, to)| now >= self.clock.at(*from) && now < self.clock.at(*to))
        {
            self.events.borrow_mut().push(Event::Busy(self.us()));
            return Err("Invalid Input Error: database is locked".to_string());
        }
        self.events.borrow_mut().push(Event::Took(self.us()));
        Ok(())
    }

    fn release(&self) {
        self.events.borrow_mut().push(Event::Release(self.us()));
    }

    fn detach(&self) {
        self.events.borrow_mut().push(Event::Detach(self.us()));
    }
}

fn ms(n: u128) -> u128 {
    n * 1000
}

fn lock_on(
    clock: &TestClock,
    busy: &[(u64, u64)],
) -> (WriteLock<'static>, Rc<RefCell<Vec<Event>>>) {
    let (store, events) = ScriptedLock::new(clock, busy);
    (
        WriteLock::with(store, clock.clone(), crate::retry::Jitter::seeded(7)),
        events,
    )
}

fn events(log: &Rc<RefCell<Vec<Event>>>) -> Vec<Event> {
    log.borrow().clone()
}

#[test]
fn a_free_lock_is_taken_at_once_held_and_released_once() {
    let clock = TestClock::new();
    let (lock, log) = lock_on(&clock, &[]);
    assert!(!lock.wanted());
    lock.note_failure("Failed to flush changes into DuckLake: database is locked");
    assert!(lock.wanted());
    lock.take(clock.at(10_000)).unwrap();
    clock.advance(300); // the step works while it holds the lock
    lock.release();
    lock.release(); // a second release runs nothing
    drop(lock);
    assert_eq!(
        events(&log),
        [
            Event::Attach(0),
            Event::Took(0),
            Event::Release(ms(300)),
            Event::Detach(ms(300))
        ]
    );
    assert_eq!(clock.sleeps(), []);
}

#[test]
fn a_call_waits_twice_its_last_hold_before_taking_the_lock_again() {
    let clock = TestClock::new();
    let (lock, log) = lock_on(&clock, &[]);
    lock.take(clock.at(10_000)).unwrap();
    clock.advance(300);
    lock.release();
    clock.advance(100); // the step commits, the next one starts
    lock.take(clock.at(10_000)).unwrap();
    // 2 x 300 ms after the release at 300 ms: taken again at 900 ms, not before.
    assert_eq!(clock.sleeps(), [Duration::from_millis(500)]);
    assert_eq!(
        events(&log),
        [
            Event::Attach(0),
            Event::Took(0),
            Event::Release(ms(300)),
            Event::Took(ms(900))
        ]
    );
    // A take long after the last hold waits nothing; a wait is cut at the deadline.
    clock.advance(200);
    lock.release(); // held 200 ms
    clock.advance(1000);
    lock.take(clock.at(10_000)).unwrap();
    assert_eq!(clock.sleeps().len(), 1);
    clock.advance(1000);
    lock.release(); // held 1 s: the next take owes 2 s
    let deadline = clock.now() + Duration::from_millis(150);
    lock.take(deadline).unwrap();
    assert_eq!(clock.sleeps()[1..], [Duration::from_millis(150)]);
    assert_eq!(clock.now(), deadline);
}

#[test]
fn a_lock_busy_for_a_writers_commit_is_polled_until_free_and_taken() {
    let clock = TestClock::new();
    let (lock, log) = lock_on(&clock, &[(0, 30)]);
    lock.take(clock.at(10_000)).unwrap();
    let seen = events(&log);
    let tries: Vec<&Event> = seen
        .iter()
        .filter(|e| !matches!(e, Event::Attach(_)))
        .collect();
    // Busy tries every 2.5-7.5 ms while the writer holds it, then taken at the first free try.
    let (last, busy) = tries.split_last().unwrap();
    assert!(busy.len() >= 4, "{seen:?}");
    assert!(
        busy.iter()
            .all(|e| matches!(e, Event::Busy(t) if *t < ms(30))),
        "{seen:?}"
    );
    assert!(
        matches!(last, Event::Took(t) if *t >= ms(30) && *t < ms(30) + 7500),
        "{seen:?}"
    );
    for pause in clock.sleeps() {
        assert!(pause >= Duration::from_micros(2500) && pause < Duration::from_micros(7500));
    }
    // 30 ms is a writer's commit, not another maintainer's hold: no release, no further wait.
    assert!(!seen.iter().any(|e| matches!(e, Event::Release(_))));
}

#[test]
fn a_lock_another_maintainer_held_is_let_go_and_taken_twice_that_later() {
    let clock = TestClock::new();
    // Another maintainer holds it for 200 ms; after the wait it holds it again from 500 to 700 ms.
    let (lock, log) = lock_on(&clock, &[(0, 200), (500, 700)]);
    lock.take(clock.at(10_000)).unwrap();
    let seen = events(&log);
    let got: Vec<u128> = seen
        .iter()
        .filter_map(|e| match e {
            Event::Took(t) | Event::Release(t) => Some(*t),
            _ => None,
        })
        .collect();
    // Taken at the first free try after 200 ms and let go at once...
    assert_eq!(got.len(), 3, "{seen:?}");
    assert!(
        got[0] >= ms(200) && got[0] < ms(200) + 7500 && got[1] == got[0],
        "{seen:?}"
    );
    // ... then a wait of twice the 200 ms it found the lock held (from the first busy try at 0).
    let waited: Vec<Duration> = clock
        .sleeps()
        .into_iter()
        .filter(|d| *d > Duration::from_millis(8))
        .collect();
    assert_eq!(waited.len(), 1, "{waited:?}");
    assert!(
        waited[0].as_micros().abs_diff(2 * got[0]) <= 2,
        "{waited:?} {got:?}"
    );
    // It then polls the second hold and takes the lock when it ends: once per take, no second
    // wait, so writers committing back to back cannot keep the maintainer out for good.
    assert!(got[2] >= ms(700) && got[2] < ms(700) + 7500, "{seen:?}");
    assert!(lock.holds.borrow().held());
}

#[test]
fn a_take_gives_up_at_its_deadline_with_the_locks_message() {
    let clock = TestClock::new();
    let (lock, log) = lock_on(&clock, &[(0, 1_000_000)]);
    let error = lock.take(clock.at(40)).unwrap_err();
    assert_eq!(
        error,
        "srdp could not take the catalog's write lock for the step: Invalid Input Error: database is locked"
    );
    assert_eq!(clock.now(), clock.at(40)); // polled up to the deadline, not past it
    assert!(matches!(events(&log).last(), Some(Event::Busy(t)) if *t == ms(40)));
    assert!(!lock.holds.borrow().held());
    drop(lock);
    assert!(matches!(events(&log).last(), Some(Event::Detach(_))));
    assert!(!events(&log).iter().any(|e| matches!(e, Event::Release(_))));
}

#[test]
fn another_error_gives_up_at_once_and_a_failed_attach_is_the_error() {
    let clock = TestClock::new();
    let (mut store, log) = ScriptedLock::new(&clock, &[]);
    store.error = Some("IO Error: disk I/O error".to_string());
    let lock = WriteLock::with(store, clock.clone(), crate::retry::Jitter::seeded(7));
    assert_eq!(
        lock.take(clock.at(10_000)).unwrap_err(),
        "srdp could not take the catalog's write lock for the step: IO Error: disk I/O error"
    );
    assert_eq!(clock.sleeps(), []);
    drop(lock);
    assert_eq!(events(&log), [Event::Attach(0), Event::Detach(0)]);

    let (mut store, log) = ScriptedLock::new(&clock, &[]);
    store.attach_error = Some("srdp could not attach the catalog's metadata file".to_string());
    let lock = WriteLock::with(store, clock.clone(), crate::retry::Jitter::seeded(7));
    assert_eq!(
        lock.take(clock.at(10_000)).unwrap_err(),
        "srdp could not attach the catalog's metadata file"
    );
    drop(lock);
    assert_eq!(events(&log), []); // nothing attached, nothing to detach
}

#[test]
fn the_way_is_cleared_for_100_200_400_then_400_ms_and_cut_at_the_deadline() {
    let clock = TestClock::new();
    let (lock, log) = lock_on(&clock, &[]);
    for _ in 0..4 {
        lock.clear_the_way(clock.at(100_000)).unwrap();
        assert!(!lock.holds.borrow().held());
    }
    let seen = events(&log);
    let holds: Vec<u128> = seen
        .windows(2)
        .filter_map(|w| match (&w[0], &w[1]) {
            (Event::Took(a), Event::Release(b)) => Some((b - a) / 1000),
            _ => None,
        })
        .collect();
    assert_eq!(holds, [100, 200, 400, 400]);
    // Between two clears the call yields twice the last hold: taken at 0, 300, 900, 2100 ms.
    let taken: Vec<u128> = seen
        .iter()
        .filter_map(|e| match e {
            Event::Took(t) => Some(t / 1000),
            _ => None,
        })
        .collect();
    assert_eq!(taken, [0, 300, 900, 2100]);
    // A hold is cut at the deadline.
    let clock = TestClock::new();
    let (lock, log) = lock_on(&clock, &[]);
    lock.clear_the_way(clock.at(60)).unwrap();
    assert_eq!(
        events(&log),
        [Event::Attach(0), Event::Took(0), Event::Release(ms(60))]
    );
}
