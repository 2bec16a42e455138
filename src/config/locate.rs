//! Finding `srdp.toml` and loading it once per version of the file.
//!
//! The file is located by, first match wins: the function's `config :=` parameter, the
//! `srdp_config` setting, the `SRDP_CONFIG` environment variable, `./srdp.toml`. A source that
//! names a file that does not exist is an error; srdp never falls through to another file. A
//! loaded file is reused while its modification time and size are unchanged.

use super::model::Config;
use super::paths::{non_empty, resolve};
use super::validate::parse;
use crate::error::{Result, SrdpError};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

/// Name of the file looked for in the working directory.
pub const DEFAULT_FILE_NAME: &str = "srdp.toml";

/// The four places a definition can come from, in the order they are tried.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// `config := '...'`; `Some("")` is an error.
    pub parameter: Option<String>,
    /// The caller's `srdp_config` setting; empty means not set.
    pub setting: Option<String>,
    /// `$SRDP_CONFIG`; empty means not set.
    pub env: Option<String>,
    /// The process's working directory, for relative paths and `./srdp.toml`.
    pub cwd: PathBuf,
}

impl Sources {
    /// Reads the environment and working directory; parameter and setting come from the caller.
    pub fn from_process(parameter: Option<String>, setting: Option<String>) -> Self {
        Sources {
            parameter,
            setting,
            env: std::env::var("SRDP_CONFIG").ok(),
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
        }
    }
}

/// Finds the definition file: the first source that names one wins, and a named file that does
/// not exist is an error (srdp never falls through to another file).
pub fn locate(sources: &Sources) -> Result<(PathBuf, &'static str)> {
    if let Some(p) = &sources.parameter {
        if p.trim().is_empty() {
            return Err(SrdpError::InvalidArgument(
                "config := must not be empty; pass the path of an srdp.toml or leave the parameter out".into(),
            ));
        }
        return existing(resolve(&sources.cwd, p), "config :=");
    }
    if let Some(p) = sources.setting.as_deref().and_then(non_empty) {
        return existing(resolve(&sources.cwd, p), "SET srdp_config");
    }
    if let Some(p) = sources.env.as_deref().and_then(non_empty) {
        return existing(resolve(&sources.cwd, p), "$SRDP_CONFIG");
    }
    let local = sources.cwd.join(DEFAULT_FILE_NAME);
    if local.is_file() {
        return Ok((local, "./srdp.toml"));
    }
    Err(SrdpError::ConfigNotFound {
        tried: format!(
            "config := (not given), SET srdp_config (not set), $SRDP_CONFIG (not set), {} (no such file)",
            local.display()
        ),
    })
}

fn existing(path: PathBuf, source: &'static str) -> Result<(PathBuf, &'static str)> {
    if path.is_file() {
        Ok((path, source))
    } else {
        Err(SrdpError::ConfigUnreadable {
            reason: if path.exists() {
                "not a file".into()
            } else {
                "no such file".into()
            },
            path,
            source_name: source.into(),
        })
    }
}

type CacheKey = (PathBuf, Option<SystemTime>, u64);
type Cache = Mutex<HashMap<PathBuf, (CacheKey, Arc<Config>)>>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// Reads and validates the file at `path`, reusing the last result while the file's
/// modification time and size are unchanged.
pub fn load(path: &Path, source: &str) -> Result<Arc<Config>> {
    let unreadable = |reason: String| SrdpError::ConfigUnreadable {
        path: path.to_path_buf(),
        source_name: source.to_string(),
        reason,
    };
    let meta = std::fs::metadata(path).map_err(|e| unreadable(e.to_string()))?;
    let key = (path.to_path_buf(), meta.modified().ok(), meta.len());
    if let Ok(cache) = cache().lock() {
        if let Some((cached_key, config)) = cache.get(path) {
            if *cached_key == key {
                return Ok(config.clone());
            }
        }
    }
    let text = std::fs::read_to_string(path).map_err(|e| unreadable(e.to_string()))?;
    let config = Arc::new(parse(path, &text)?);
    if let Ok(mut cache) = cache().lock() {
        cache.insert(path.to_path_buf(), (key, config.clone()));
    }
    Ok(config)
}
