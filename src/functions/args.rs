//! Reading a function's arguments in bind, with srdp's rules: NULL, empty strings and text with
//! a NUL byte are errors that name the parameter, and the definition file is located and loaded
//! once per call.

use crate::config::{self, Config, Sources};
use crate::error::{Result, SrdpError};
use crate::sql::Literal;
use duckdb::ffi;
use duckdb::vtab::{BindInfo, Value};
use std::ffi::{CStr, CString};
use std::path::PathBuf;
use std::sync::Arc;

/// The name of the setting registered by the extension.
pub const CONFIG_SETTING: &str = "srdp_config";

/// A function's arguments during bind.
pub struct Args<'a> {
    bind: &'a BindInfo,
    function: &'static str,
    positional: &'static [&'static str],
}

impl<'a> Args<'a> {
    pub fn new(
        bind: &'a BindInfo,
        function: &'static str,
        positional: &'static [&'static str],
    ) -> Self {
        Args {
            bind,
            function,
            positional,
        }
    }

    /// The positional text argument at `index`; NULL or empty is an error.
    pub fn required_text(&self, index: usize) -> Result<String> {
        let name = self.positional.get(index).copied().unwrap_or("argument");
        let value = self.bind.get_parameter(index as u64);
        if value.is_null() {
            return Err(SrdpError::InvalidArgument(format!(
                "{name} must not be NULL; call {}('<{name}>')",
                self.function
            )));
        }
        let text = text_of(&value, name)?;
        if text.trim().is_empty() {
            return Err(SrdpError::InvalidArgument(format!(
                "{name} must not be empty; call {}('<{name}>')",
                self.function
            )));
        }
        Ok(text)
    }

    fn named(&self, name: &str) -> Result<Option<Value>> {
        match self.bind.get_named_parameter(name) {
            None => Ok(None),
            Some(v) if v.is_null() => Err(SrdpError::InvalidArgument(format!(
                "{name} := must not be NULL; leave the parameter out to use its default"
            ))),
            Some(v) => Ok(Some(v)),
        }
    }

    /// A named text argument; NULL or empty is an error, absent is `None`.
    pub fn text(&self, name: &str) -> Result<Option<String>> {
        match self.named(name)? {
            None => Ok(None),
            Some(v) => {
                let text = text_of(&v, &format!("{name} :="))?;
                if text.trim().is_empty() {
                    Err(SrdpError::InvalidArgument(format!(
                        "{name} := must not be empty; leave the parameter out to use its default"
                    )))
                } else {
                    Ok(Some(text))
                }
            }
        }
    }

    /// A named boolean argument; NULL is an error, absent is `None`.
    pub fn boolean(&self, name: &str) -> Result<Option<bool>> {
        Ok(self.named(name)?.map(|v| v.to_bool()))
    }

    /// A named BIGINT argument; NULL is an error, absent is `None`.
    pub fn bigint(&self, name: &str) -> Result<Option<i64>> {
        Ok(self.named(name)?.map(|v| v.to_int64()))
    }

    /// The caller's effective values (session or global) of DuckDB settings, in DuckDB's text
    /// rendering; `None` for a setting that is NULL (its default) or unknown.
    pub fn caller_settings(&self, names: &[&str]) -> Vec<(String, Option<String>)> {
        names
            .iter()
            .map(|name| {
                let value = caller_value(self.bind, name).map(|v| v.to_string());
                ((*name).to_string(), value)
            })
            .collect()
    }

    /// Where the definition comes from for this call (see [`config::locate`]).
    pub fn sources(&self) -> Result<Sources> {
        let parameter = match self.bind.get_named_parameter("config") {
            None => None,
            Some(v) if v.is_null() => {
                return Err(SrdpError::InvalidArgument(
                    "config := must not be NULL; pass the path of an srdp.toml or leave the parameter out".into(),
                ))
            }
            Some(v) => Some(text_of(&v, "config :=")?),
        };
        Ok(Sources::from_process(
            parameter,
            caller_setting(self.bind, CONFIG_SETTING)?,
        ))
    }

    /// Locates and loads the definition.
    pub fn config(&self) -> Result<Arc<Config>> {
        let (path, source) = config::locate(&self.sources()?)?;
        config::load(&path, source)
    }

    /// The located definition path, or `None` when there is none anywhere.
    pub fn config_path(&self) -> Result<Option<PathBuf>> {
        match config::locate(&self.sources()?) {
            Ok((path, _)) => Ok(Some(path)),
            Err(SrdpError::ConfigNotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// The text of a VARCHAR argument, refusing a NUL byte anywhere in it.
///
/// duckdb-rs reads text through a C string, which ends at the first NUL: `'lake' || chr(0) ||
/// 'zzz'` would silently become `lake`. DuckDB's SQL rendering of the value
/// (`duckdb_value_to_string`, `'...'` with quotes doubled) is cut at the same NUL, so it matches
/// the quoted C-string text exactly when the value has no NUL byte.
fn text_of(value: &Value, parameter: &str) -> Result<String> {
    let text = value.to_string();
    if sql_rendering(value).is_some_and(|sql| sql != Literal::new(&text).as_sql()) {
        return Err(SrdpError::InvalidArgument(format!(
            "{parameter} contains a NUL byte (chr(0)); pass the text without it"
        )));
    }
    Ok(text)
}

// `Value` in duckdb-rs =1.10505.0 is a struct with the single field `ptr: duckdb_value`; this
// assertion fails the build if that layout ever changes.
const _: () = assert!(std::mem::size_of::<Value>() == std::mem::size_of::<ffi::duckdb_value>());

/// DuckDB's SQL rendering of a value, up to the first NUL byte.
fn sql_rendering(value: &Value) -> Option<String> {
    // SAFETY: `Value` is `#[repr(Rust)]` with exactly one field of type `duckdb_value` (checked
    // by the size assertion above and pinned by the exact crate version); the pointer stays
    // owned by `value`, which outlives this call.
    let raw: ffi::duckdb_value = unsafe { *(value as *const Value).cast::<ffi::duckdb_value>() };
    // SAFETY: `raw` is a live value; the returned string is malloc'ed by DuckDB and freed below.
    let rendered = unsafe { ffi::duckdb_value_to_string(raw) };
    if rendered.is_null() {
        return None;
    }
    // SAFETY: `rendered` is a NUL-terminated string owned by us until `duckdb_free`.
    let text = unsafe { CStr::from_ptr(rendered) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: allocated by DuckDB with malloc, freed exactly once.
    unsafe { ffi::duckdb_free(rendered.cast()) };
    Some(text)
}

// `BindInfo` in duckdb-rs =1.10505.0 is a struct with the single field `ptr: duckdb_bind_info`
// and no public accessor. This assertion fails the build if that layout ever changes.
const _: () =
    assert!(std::mem::size_of::<BindInfo>() == std::mem::size_of::<ffi::duckdb_bind_info>());

/// The caller's own value of a setting (session or global), read through the caller's client
/// context during bind. The runner connection would only see global values.
fn caller_setting(bind: &BindInfo, setting: &str) -> Result<Option<String>> {
    match caller_value(bind, setting) {
        Some(value) => text_of(&value, &format!("the setting {setting}")).map(Some),
        None => Ok(None),
    }
}

/// The caller's value of `setting` (`None`: NULL, unknown, or no client context).
fn caller_value(bind: &BindInfo, setting: &str) -> Option<Value> {
    let name = CString::new(setting).ok()?;
    // SAFETY: `BindInfo` is `#[repr(Rust)]` with exactly one field of type `duckdb_bind_info`
    // (checked by the size assertion above and pinned by the exact crate version), so reading
    // the first pointer-sized word yields the raw bind info DuckDB passed to this bind call.
    let raw: ffi::duckdb_bind_info =
        unsafe { *(bind as *const BindInfo).cast::<ffi::duckdb_bind_info>() };
    let mut context: ffi::duckdb_client_context = std::ptr::null_mut();
    // SAFETY: `raw` is valid for the duration of bind; the context is destroyed below.
    unsafe { ffi::duckdb_table_function_get_client_context(raw, &mut context) };
    if context.is_null() {
        return None;
    }
    let mut scope: ffi::duckdb_config_option_scope = 0;
    // SAFETY: `context` is a live client context and `name` a NUL-terminated string.
    let value =
        unsafe { ffi::duckdb_client_context_get_config_option(context, name.as_ptr(), &mut scope) };
    // SAFETY: `context` was created by the call above and is not used after this.
    unsafe { ffi::duckdb_destroy_client_context(&mut context) };
    if value.is_null() {
        return None;
    }
    let value = Value::from(value); // owns and destroys the duckdb_value
    (!value.is_null()).then_some(value)
}
