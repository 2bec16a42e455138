//! `srdp_version()`: identifies the build.
//!
//! Parameters: `config := 'path'` (optional).
//! Returns one row: `extension_version VARCHAR` (crate version and git commit, as in the file's
//! metadata footer), `duckdb_version VARCHAR` (of the host DuckDB), `config_path VARCHAR` (the
//! `srdp.toml` this call would use, NULL when none is found).
//! Errors: a `config :=`, `srdp_config` or `SRDP_CONFIG` that names a missing file.
//!
//! ```sql
//! SELECT * FROM srdp_version();
//! ```

use super::{Args, Cell, Column, Shared, SrdpFunction};
use crate::error::Result;
use std::ffi::CStr;

/// The extension version: set by the Makefile as `v<crate version>-<git commit>`.
pub const EXTENSION_VERSION: &str = match option_env!("SRDP_EXTENSION_VERSION") {
    Some(v) => v,
    None => concat!("v", env!("CARGO_PKG_VERSION")),
};

pub struct Version;

impl SrdpFunction for Version {
    type Bound = Option<String>;
    const NAME: &'static str = "srdp_version";

    fn columns() -> Vec<Column> {
        vec![
            Column::text("extension_version"),
            Column::text("duckdb_version"),
            Column::text("config_path"),
        ]
    }

    fn bind(args: &Args) -> Result<Self::Bound> {
        Ok(args.config_path()?.map(|p| p.display().to_string()))
    }

    fn run(config_path: &Self::Bound, _shared: &Shared) -> Result<Vec<Vec<Cell>>> {
        // SAFETY: DuckDB returns a static NUL-terminated string.
        let duckdb = unsafe { CStr::from_ptr(duckdb::ffi::duckdb_library_version()) };
        Ok(vec![vec![
            EXTENSION_VERSION.into(),
            duckdb.to_string_lossy().into_owned().into(),
            config_path.clone().into(),
        ]])
    }
}
