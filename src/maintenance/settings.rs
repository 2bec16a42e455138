//! The caller's DuckLake settings, given to srdp's connection for the length of a call.

use super::Lake;
use crate::error::{Result, SrdpError};
use crate::sql::{self, Ident, Literal};

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

impl Lake<'_> {
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
    pub(super) fn apply_settings(&self, settings: &[(String, Option<String>)]) -> Result<()> {
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

    /// Gives srdp's connection the caller's `ducklake_target_file_size` again.
    pub(super) fn use_caller_target(&self) -> Result<()> {
        let caller: Vec<(String, Option<String>)> = self
            .caller
            .borrow()
            .iter()
            .filter(|(name, _)| name == "ducklake_target_file_size")
            .cloned()
            .collect();
        if caller.is_empty() {
            let reset = sql::session_setting(&Ident::new("ducklake_target_file_size"), None);
            return self.conn.execute_batch(&reset).map_err(|e| {
                SrdpError::duckdb("resetting srdp's target file size failed".to_string(), e)
            });
        }
        self.apply_settings(&caller)
    }

    /// DuckDB's `threads` setting (global: the caller's instance is srdp's).
    pub fn threads(&self) -> Result<Option<u64>> {
        Ok(self
            .global_setting("threads")?
            .and_then(|v| v.trim().parse().ok()))
    }

    /// A global DuckDB setting's current value.
    pub(super) fn global_setting(&self, name: &str) -> Result<Option<String>> {
        Ok(self
            .read(&sql::setting_value(&Literal::new(name)), |r| {
                r.get::<_, Option<String>>(0)
            })?
            .into_iter()
            .flatten()
            .next())
    }

    pub(super) fn set_global(&self, name: &str, value: &str) -> Result<()> {
        let statement = format!("SET GLOBAL {} = {value}", Ident::new(name));
        self.conn
            .execute_batch(&statement)
            .map_err(|e| SrdpError::duckdb(format!("SET GLOBAL {name} = {value} failed"), e))
    }

    /// `work` with DuckDB's global `enable_external_file_cache` off (it keeps ~12.5 KB of every
    /// file read until the process ends), turned back on afterwards, also after an error, when it
    /// was on.
    pub(super) fn without_file_cache<T>(&self, work: impl FnOnce() -> Result<T>) -> Result<T> {
        let cache = self.global_setting("enable_external_file_cache")?;
        let cache_was_on = cache.as_deref() == Some("true");
        if cache_was_on {
            self.set_global("enable_external_file_cache", "false")?;
        }
        let outcome = work();
        let cache_back = if cache_was_on {
            self.set_global("enable_external_file_cache", "true")
        } else {
            Ok(())
        };
        let value = outcome?;
        cache_back?;
        Ok(value)
    }
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
