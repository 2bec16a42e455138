//! One error type for srdp, named by what went wrong.
//!
//! Messages are complete sentences for the person at the console: they name the file, key,
//! catalog or dataset and say what to do. The SQL function name is added in front by the
//! function layer (`srdp_attach_catalog: ...`), so variants do not repeat it. No message may
//! contain a secret: anything that came from DuckDB passes through [`crate::redact::redact`].

use std::path::PathBuf;

/// `Result` with [`SrdpError`] as the default error.
pub type Result<T, E = SrdpError> = std::result::Result<T, E>;

/// Everything that can go wrong in srdp.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SrdpError {
    /// No definition file could be located.
    #[error(
        "no srdp.toml found; looked at {tried}. Pass config := '/path/to/srdp.toml', \
         SET srdp_config = '/path/to/srdp.toml', or set the environment variable SRDP_CONFIG"
    )]
    ConfigNotFound { tried: String },

    /// The file named by a source does not exist or cannot be read.
    #[error("cannot read {path} (from {source_name}): {reason}")]
    ConfigUnreadable {
        path: PathBuf,
        source_name: String,
        reason: String,
    },

    /// TOML syntax, unknown keys and wrong types, with the line they are on.
    #[error("{path}:{line}: {key}{message}")]
    ConfigInvalid {
        path: PathBuf,
        line: usize,
        /// `key 'catalogs.lake.data_path': ` or empty when no key applies.
        key: String,
        message: String,
    },

    /// A function argument that is NULL, empty or not one of the allowed values.
    #[error("{0}")]
    InvalidArgument(String),

    /// The catalog is not defined in the file.
    #[error("unknown catalog '{name}' in {path} (defined: {known})")]
    UnknownCatalog {
        name: String,
        path: PathBuf,
        known: String,
    },

    /// The role needs a DuckDB secret that this session does not have.
    #[error(
        "catalog '{catalog}' needs the DuckDB secret '{secret}' for the {role} role, and this \
         session has none by that name. Create it first (CREATE SECRET {secret} (...)); \
         nothing was attached"
    )]
    MissingSecret {
        catalog: String,
        role: String,
        secret: String,
    },

    /// A reader asked for a lake that was never created.
    #[error(
        "catalog '{catalog}' has no lake yet: {metadata} does not exist. A reader never \
         creates a lake; attach once with role := 'writer' to create it"
    )]
    LakeMissing { catalog: String, metadata: String },

    /// A reader found the metadata file, but no DuckLake catalog in it: a writer's first attach
    /// was interrupted (a kill while DuckLake created the lake) or never ran. DuckLake creates
    /// a lake in one metadata transaction, so the writer's next attach creates it whole.
    #[error(
        "catalog '{catalog}' is not initialised yet: {metadata} holds no complete DuckLake \
         catalog (a writer's first attach was interrupted, or none has run). A reader never \
         creates a lake; the writer role creates it on its next attach: \
         srdp_attach_catalog('{catalog}', role := 'writer')"
    )]
    LakeNotInitialised { catalog: String, metadata: String },

    /// The alias is taken by a database srdp did not attach, or by another definition.
    #[error("{0}")]
    AliasInUse(String),

    /// The catalog is not attached in this database.
    #[error(
        "catalog '{catalog}' is not attached in this database; call \
         srdp_attach_catalog('{catalog}'{role_hint}) first"
    )]
    NotAttached { catalog: String, role_hint: String },

    /// Maintenance needs the writer role.
    #[error(
        "catalog '{catalog}' is attached read-only (alias '{alias}'); {what} needs the writer \
         role: call srdp_attach_catalog('{catalog}', role := 'writer', refresh := true)"
    )]
    ReadOnly {
        catalog: String,
        alias: String,
        what: String,
    },

    /// A maintenance step failed for good; earlier datasets stay committed.
    #[error(
        "dataset '{dataset}' failed to {step} after {attempts} attempt(s): {message}.{retried} \
         Datasets committed before it: {done}"
    )]
    MaintenanceFailed {
        dataset: String,
        step: String,
        attempts: u32,
        message: String,
        /// Empty, or ` Retried for 301.2 s; max_retry_seconds is 300.` when it gave up on time.
        retried: String,
        done: String,
    },

    /// DuckLake 1.0 read an inlined-data table that another process dropped.
    #[error(
        "catalog '{catalog}' read a stale inlined-data table (DuckLake 1.0 keeps a dropped table \
         cached after another process flushes; duckdb/ducklake#1305) while {doing}: {message}. \
         {outcome}"
    )]
    StaleCatalog {
        catalog: String,
        doing: String,
        message: String,
        outcome: String,
    },

    /// A writer, layer or project that the catalog's definition does not name.
    #[error("unknown {what} '{name}' in catalog '{catalog}' of {path} {known}")]
    UnknownName {
        what: &'static str,
        name: String,
        catalog: String,
        path: PathBuf,
        /// `(writers: dbt, dlt); what to do`.
        known: String,
    },

    /// The single_writer rule refuses this writer on this schema.
    #[error(
        "writer '{writer}' may not write schema '{schema}' of catalog '{catalog}': {why}. \
         To relax the rule, add {relax} in {path}",
        relax = crate::rules::relax_line(crate::rules::SINGLE_WRITER)
    )]
    WriterRefused {
        writer: String,
        schema: String,
        catalog: String,
        /// `it is owned by 'dbt' (single_writer). 'dlt' may write: raw and the landing zone
        /// (landing_path)`.
        why: String,
        path: PathBuf,
    },

    /// The single_writer rule refuses this writer on the catalog's landing zone (dlt owns it).
    #[error(
        "writer '{writer}' may not write the landing zone of catalog '{catalog}' ({landing}): \
         {why}. To relax the rule, add {relax} in {path}",
        relax = crate::rules::relax_line(crate::rules::SINGLE_WRITER)
    )]
    LandingRefused {
        writer: String,
        catalog: String,
        /// The landing path as `srdp_catalogs` shows it.
        landing: String,
        /// `it is owned by 'dlt' (single_writer). 'dbt' may write: curated`.
        why: String,
        path: PathBuf,
    },

    /// DuckDB refused a statement srdp ran; the text is already redacted.
    #[error("{context}: {message}")]
    DuckDb { context: String, message: String },
}

impl SrdpError {
    /// Wraps a DuckDB error, redacting any credential it echoes.
    pub fn duckdb(context: impl Into<String>, err: impl std::fmt::Display) -> Self {
        SrdpError::DuckDb {
            context: context.into(),
            message: crate::redact::redact(&err.to_string()),
        }
    }
}
