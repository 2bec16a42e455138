//! When srdp runs a failed step again, and how long it waits first (pure).
//!
//! The budget is time, not a count: a step that keeps meeting `database is locked` or a commit
//! conflict is run again until `max_retry_seconds` have passed since its first attempt, so a
//! busy hour of loaders delays the nightly maintenance instead of failing it. `max_attempts`
//! still caps the count (off by default: a thousand attempts). Waits start at
//! `retry_backoff_ms`, double each attempt up to [`MAX_RETRY_WAIT_MS`] (250 ms), and are jittered
//! ("equal jitter": between half and all of that wait), so two processes that collided once do
//! not collide again in lock step.

use std::time::Duration;

/// Cap of one wait between attempts. Short on purpose: on a busy SQLite catalog a flush
/// commits only in a gap between loaders' commits, and every wait lets more inlined rows pile
/// up, which makes the next attempt longer and less likely to fit a gap. With two loaders
/// committing for 60 s (`bench/load.py`), a 2 s cap left a call retrying until the loaders
/// stopped (up to 59 s, 38 attempts); with 250 ms, 12-20 calls finished during the load, the
/// longest in 14-21 s.
pub const MAX_RETRY_WAIT_MS: u64 = 250;

/// How often and how long a step is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// The most attempts, the first included.
    pub max_attempts: u32,
    /// No attempt starts after this much time since the first one.
    pub max_retry: Duration,
    /// The first wait, before jitter.
    pub first_wait_ms: u64,
}

impl RetryPolicy {
    /// The wait before attempt `attempt + 1`, given the time since the first attempt started
    /// and a jitter draw in `[0, 1)`; `None` when the step must give up. The wait is shortened
    /// to end exactly at the budget when the full wait would pass it, so the last attempt still
    /// happens inside the budget.
    pub fn next_wait(&self, attempt: u32, elapsed: Duration, jitter: f64) -> Option<Duration> {
        if attempt >= self.max_attempts || elapsed >= self.max_retry {
            return None;
        }
        let full = backoff(self.first_wait_ms, attempt);
        let jittered = full.mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0));
        Some(jittered.min(self.max_retry - elapsed))
    }
}

/// The wait before the attempt after `attempt`, before jitter: `first_ms` doubled each time,
/// capped at [`MAX_RETRY_WAIT_MS`].
pub fn backoff(first_ms: u64, attempt: u32) -> Duration {
    let factor = 1u64 << (attempt.saturating_sub(1)).min(20);
    Duration::from_millis(first_ms.saturating_mul(factor).min(MAX_RETRY_WAIT_MS))
}

/// A small xorshift generator for jitter, seeded per step from the clock and the thread.
pub struct Jitter(u64);

impl Jitter {
    pub fn seeded(seed: u64) -> Self {
        Jitter(seed | 1)
    }

    /// Seeded from the wall clock's nanoseconds and the process id.
    pub fn from_clock() -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Jitter::seeded(nanos ^ (u64::from(std::process::id()) << 32))
    }

    /// The next draw in `[0, 1)`.
    pub fn draw(&mut self) -> f64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        (x >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 1000,
            max_retry: Duration::from_secs(10),
            first_wait_ms: 100,
        }
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let ms: Vec<u128> = (1..=7).map(|a| backoff(100, a).as_millis()).collect();
        assert_eq!(ms, vec![100, 200, 250, 250, 250, 250, 250]);
        assert_eq!(backoff(10, 4).as_millis(), 80);
        assert_eq!(backoff(0, 3), Duration::ZERO);
    }

    #[test]
    fn waits_are_jittered_between_half_and_all() {
        let p = policy();
        assert_eq!(
            p.next_wait(2, Duration::ZERO, 0.0),
            Some(Duration::from_millis(100))
        );
        assert_eq!(
            p.next_wait(2, Duration::ZERO, 0.5),
            Some(Duration::from_millis(150))
        );
        assert_eq!(
            p.next_wait(9, Duration::ZERO, 0.999_999),
            Some(Duration::from_millis(250).mul_f64(0.999_999_5))
        );
    }

    #[test]
    fn the_time_budget_ends_the_retries() {
        let p = policy();
        assert_eq!(p.next_wait(40, Duration::from_secs(10), 0.3), None);
        // The last wait is cut so the last attempt starts inside the budget.
        assert_eq!(
            p.next_wait(40, Duration::from_millis(9_900), 1.0),
            Some(Duration::from_millis(100))
        );
    }

    #[test]
    fn the_attempt_cap_still_holds() {
        let p = RetryPolicy {
            max_attempts: 3,
            ..policy()
        };
        assert!(p.next_wait(2, Duration::ZERO, 0.0).is_some());
        assert_eq!(p.next_wait(3, Duration::ZERO, 0.0), None);
        let once = RetryPolicy {
            max_attempts: 1,
            ..policy()
        };
        assert_eq!(once.next_wait(1, Duration::ZERO, 0.0), None);
    }

    #[test]
    fn jitter_draws_spread_over_the_unit_interval() {
        let mut j = Jitter::seeded(42);
        let draws: Vec<f64> = (0..10_000).map(|_| j.draw()).collect();
        assert!(draws.iter().all(|d| (0.0..1.0).contains(d)));
        let low = draws.iter().filter(|&&d| d < 0.5).count();
        assert!((4_500..5_500).contains(&low), "{low}");
    }
}
