//! srdp: a DuckDB extension that attaches and maintains DuckLake catalogs from one shared
//! definition file, `srdp.toml`, so that every component of a data platform gets identical SQL.
//!
//! | function | does |
//! |---|---|
//! | `srdp_version()` | identifies the build and the `srdp.toml` in use |
//! | `srdp_catalogs()` | lists the catalog definitions, secrets redacted |
//! | `srdp_attach_catalog(catalog, alias :=, role :=, refresh :=)` | attaches exactly as defined |
//! | `srdp_inlined_row_count(catalog, schema_name :=, table_name :=)` | inlined rows per dataset |
//! | `srdp_flush(catalog, schema_name :=, table_name :=, dry_run :=)` | flushes inlined rows, one dataset at a time |
//! | `srdp_compact(catalog, schema_name :=, table_name :=, dry_run :=)` | flushes, then merges small files, per dataset |
//! | `srdp_catalog_pressure(catalog, threshold :=)` | datasets over the inlined-row threshold |
//!
//! Every function takes `config := 'path'`; otherwise the `srdp_config` setting, then
//! `$SRDP_CONFIG`, then `./srdp.toml` is used.
//!
//! Layout: [`config`] (a folder: raw serde layer, model, validation, discovery, spans, paths),
//! [`rules`] (a folder: the rules, the single_writer check, the dlt destination), [`attach`],
//! [`plan`], [`sql`] and [`redact`] are pure and unit-tested without DuckDB; [`runner`] executes
//! SQL on the runner connection and [`maintenance`] runs the per-dataset steps on it;
//! [`functions`] holds one file per SQL function; this file holds only the entrypoint.

pub mod attach;
pub mod audit;
pub mod config;
pub mod error;
pub mod functions;
pub mod libpq;
pub mod maintenance;
pub mod plan;
pub mod redact;
pub mod retry;
pub mod roles;
pub mod rules;
pub mod runner;
pub mod sql;

use duckdb::{ffi, Connection};
use std::error::Error;
use std::ffi::CString;
use std::sync::Arc;

/// Minimum DuckDB C API version; the same file then loads into DuckDB 1.5.5 and 2.x.
const MIN_C_API_VERSION: &str = "v1.2.0";

/// The entrypoint DuckDB calls on `LOAD` (derived from the file name `srdp.duckdb_extension`).
///
/// Written out instead of `#[duckdb_entrypoint_c_api]` because registering the `srdp_config`
/// setting needs the raw connection that the macro hides. Errors and panics become a load error
/// instead of aborting the host process.
///
/// # Safety
/// Called by DuckDB with valid `info` and `access` pointers.
#[no_mangle]
pub unsafe extern "C" fn srdp_init_c_api(
    info: ffi::duckdb_extension_info,
    access: *const ffi::duckdb_extension_access,
) -> bool {
    // SAFETY: the pointers come straight from DuckDB's loader.
    let outcome = std::panic::catch_unwind(|| unsafe { init(info, access) });
    let message = match outcome {
        Ok(Ok(loaded)) => return loaded,
        Ok(Err(e)) => format!("srdp failed to load: {e}"),
        Err(_) => "srdp failed to load: a panic in the entrypoint".to_string(),
    };
    // SAFETY: `access` is valid for the duration of this call.
    if let Some(set_error) = unsafe { (*access).set_error } {
        let text = CString::new(message).unwrap_or_default();
        // SAFETY: `info` is valid and `text` NUL-terminated.
        unsafe { set_error(info, text.as_ptr()) };
    }
    false
}

/// # Safety
/// As [`srdp_init_c_api`].
unsafe fn init(
    info: ffi::duckdb_extension_info,
    access: *const ffi::duckdb_extension_access,
) -> Result<bool, Box<dyn Error>> {
    // SAFETY: forwarded from DuckDB's loader.
    if !unsafe { ffi::duckdb_rs_extension_api_init(info, access, MIN_C_API_VERSION)? } {
        return Ok(false);
    }
    // SAFETY: `access` is valid; `get_database` returns a pointer valid until we return.
    let get_database = unsafe { (*access).get_database }.ok_or("DuckDB gave no get_database")?;
    let db_ptr = unsafe { get_database(info) };
    if db_ptr.is_null() {
        return Ok(false);
    }
    // SAFETY: checked non-null above; the handle is only used before this function returns
    // (every connection srdp needs is opened here: a later connect is a use-after-free).
    let db = unsafe { *db_ptr };
    unsafe { register_config_setting(db)? };
    let con = unsafe { Connection::open_from_raw(db.cast())? };
    let runner = con.try_clone()?;
    let lock_conn = con.try_clone()?;
    let shared = functions::Shared {
        runner: Arc::new(runner::Runner::new(runner, lock_conn)),
    };
    functions::register(&con, &shared)?;
    Ok(true)
}

/// Registers `srdp_config` (VARCHAR, default empty, session scope by default).
///
/// # Safety
/// `db` must be the live database handle handed to the entrypoint.
unsafe fn register_config_setting(db: ffi::duckdb_database) -> Result<(), Box<dyn Error>> {
    let name = CString::new(functions::args_config_setting())?;
    let description =
        CString::new("Path of the srdp.toml that srdp functions read when no config := is given")?;
    let empty = CString::new("")?;
    // SAFETY: every handle below is created here, used once and destroyed before returning.
    unsafe {
        let mut raw: ffi::duckdb_connection = std::ptr::null_mut();
        if ffi::duckdb_connect(db, &mut raw) != ffi::DuckDBSuccess {
            return Err("cannot open a connection to register srdp_config".into());
        }
        let mut option = ffi::duckdb_create_config_option();
        ffi::duckdb_config_option_set_name(option, name.as_ptr());
        let mut varchar = ffi::duckdb_create_logical_type(ffi::DUCKDB_TYPE_DUCKDB_TYPE_VARCHAR);
        ffi::duckdb_config_option_set_type(option, varchar);
        let mut default = ffi::duckdb_create_varchar(empty.as_ptr());
        ffi::duckdb_config_option_set_default_value(option, default);
        ffi::duckdb_config_option_set_default_scope(
            option,
            ffi::duckdb_config_option_scope_DUCKDB_CONFIG_OPTION_SCOPE_SESSION,
        );
        ffi::duckdb_config_option_set_description(option, description.as_ptr());
        let state = ffi::duckdb_register_config_option(raw, option);
        ffi::duckdb_destroy_value(&mut default);
        ffi::duckdb_destroy_logical_type(&mut varchar);
        ffi::duckdb_destroy_config_option(&mut option);
        ffi::duckdb_disconnect(&mut raw);
        if state != ffi::DuckDBSuccess {
            return Err("cannot register the srdp_config setting".into());
        }
    }
    Ok(())
}
