//! The model: what a valid `srdp.toml` means, and the named defaults it falls back to.
//!
//! Every value here has passed [`super::validate`]: paths are absolute, backends are parsed,
//! tunables have their defaults applied and no field holds a value the file could not have meant.

use super::paths::is_url;
use super::patterns::SchemaPattern;
use crate::error::{Result, SrdpError};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Per-attach DuckLake `DATA_INLINING_ROW_LIMIT` unless a catalog overrides it.
pub const DEFAULT_DATA_INLINING_ROW_LIMIT: u64 = 1000;
/// Advisory threshold of `srdp_catalog_pressure`, in inlined rows per dataset.
pub const DEFAULT_PRESSURE_WARNING_ROWS: u64 = 100_000;
/// Most attempts per step on retryable failures; high, so that the time budget
/// ([`DEFAULT_MAX_RETRY_SECONDS`]) decides (see [`crate::retry`]).
pub const DEFAULT_MAX_ATTEMPTS: u32 = 1000;
/// Seconds after a step's first attempt during which retryable failures are retried.
pub const DEFAULT_MAX_RETRY_SECONDS: u64 = 300;
/// First wait between attempts; doubled each attempt, capped at
/// [`crate::retry::MAX_RETRY_WAIT_MS`], jittered.
pub const DEFAULT_RETRY_BACKOFF_MS: u64 = 100;
/// Metadata schema of DuckDB-file and SQLite catalogs (SQLite has no other).
pub const DEFAULT_FILE_METADATA_SCHEMA: &str = "main";
/// Metadata schema of PostgreSQL catalogs when the file does not name one (DuckDB's default).
pub const DEFAULT_POSTGRES_METADATA_SCHEMA: &str = "public";
/// `META_BUSY_TIMEOUT` for SQLite catalogs, in milliseconds.
pub const SQLITE_BUSY_TIMEOUT_MS: u64 = 5000;

/// Where the metadata lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// A DuckDB database file (one process at a time).
    DuckDbFile { path: PathBuf },
    /// A SQLite file (attached in WAL mode).
    Sqlite { path: PathBuf },
    /// A PostgreSQL database, libpq `key=value` without a password.
    Postgres { conninfo: String },
}

impl Backend {
    /// `duckdb`, `sqlite` or `postgres`.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::DuckDbFile { .. } => "duckdb",
            Backend::Sqlite { .. } => "sqlite",
            Backend::Postgres { .. } => "postgres",
        }
    }

    /// The metadata location as shown to people (never contains a secret).
    pub fn display(&self) -> String {
        match self {
            Backend::DuckDbFile { path } => path.display().to_string(),
            Backend::Sqlite { path } => format!("sqlite:{}", path.display()),
            Backend::Postgres { conninfo } => {
                format!("postgres:{}", crate::redact::redact(conninfo))
            }
        }
    }

    /// The local metadata file, for backends that have one.
    pub fn file(&self) -> Option<&Path> {
        match self {
            Backend::DuckDbFile { path } | Backend::Sqlite { path } => Some(path),
            Backend::Postgres { .. } => None,
        }
    }
}

/// Tunables after defaults and overrides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tunables {
    pub data_inlining_row_limit: u64,
    pub pressure_warning_rows: u64,
    pub max_attempts: u32,
    pub max_retry_seconds: u64,
    pub retry_backoff_ms: u64,
}

impl Tunables {
    /// The retry policy of maintenance steps and re-attaches.
    pub fn retry(&self) -> crate::retry::RetryPolicy {
        crate::retry::RetryPolicy {
            max_attempts: self.max_attempts,
            max_retry: std::time::Duration::from_secs(self.max_retry_seconds),
            first_wait_ms: self.retry_backoff_ms,
        }
    }
}

impl Default for Tunables {
    fn default() -> Self {
        Tunables {
            data_inlining_row_limit: DEFAULT_DATA_INLINING_ROW_LIMIT,
            pressure_warning_rows: DEFAULT_PRESSURE_WARNING_ROWS,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            max_retry_seconds: DEFAULT_MAX_RETRY_SECONDS,
            retry_backoff_ms: DEFAULT_RETRY_BACKOFF_MS,
        }
    }
}

/// Who owns a schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaDef {
    /// One writer, or several when `single_writer` is relaxed.
    pub writers: Vec<String>,
    pub layer: String,
}

/// The only layer of DuckLake schemas dlt may own while `single_writer` is on (dlt also writes
/// the landing zone, which is a folder, not a schema).
pub const DLT_LAYER: &str = "raw";
/// The layer name of the landing zone: `srdp_dlt_destination(layer := 'landing')`, and the
/// layer whose dataset name (`<project>_landing`, or `landing_dataset`) is a tenant project's
/// folder inside `landing_path`. Never the layer of a schema.
pub const LANDING_LAYER: &str = "landing";
/// The schema promoted loads go into when `landing_path` is set and `promote_into` is not.
pub const DEFAULT_PROMOTE_INTO: &str = "raw";
/// The layer a tenant project's dataset names are kept for: raw schemas and landing folders.
pub(super) const PROJECT_DATASET_LAYERS: [&str; 2] = [DLT_LAYER, LANDING_LAYER];

/// A tenant project's dataset-name overrides, keyed by layer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProjectDef {
    pub datasets: BTreeMap<String, String>,
}

/// The dataset `project` loads `layer` into: its override or `<project>_<layer>`.
pub(super) fn project_dataset(
    projects: &BTreeMap<String, ProjectDef>,
    project: &str,
    layer: &str,
) -> String {
    projects
        .get(project)
        .and_then(|p| p.datasets.get(layer))
        .cloned()
        .unwrap_or_else(|| format!("{project}_{layer}"))
}

/// One catalog, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogDef {
    pub name: String,
    pub backend: Backend,
    pub metadata_schema: String,
    /// Absolute local path ending in `/`, or an object-store URL.
    pub data_path: String,
    /// The landing zone: a folder outside DuckLake that dlt's filesystem destination writes,
    /// in the same form as `data_path`; `None` when the catalog has none.
    pub landing_path: Option<String>,
    /// The schema promoted loads are appended to (`Some` exactly when `landing_path` is): a raw
    /// schema of this catalog that dlt does not own.
    pub promote_into: Option<String>,
    pub project: Option<String>,
    pub writer_secret: Option<String>,
    pub reader_secret: Option<String>,
    pub tunables: Tunables,
    /// Exact `[catalogs.<c>.schemas.<s>]` entries, keyed by schema name.
    pub schemas: BTreeMap<String, SchemaDef>,
    /// `[catalogs.<c>.schemas."<prefix>*"]` entries, longest prefix first: the first that
    /// matches a name is its most specific pattern. An exact entry wins over every pattern.
    pub patterns: Vec<SchemaPattern>,
    /// Tenant projects: `project` (if set) and every `[catalogs.<c>.projects.<p>]`.
    pub projects: BTreeMap<String, ProjectDef>,
}

impl CatalogDef {
    /// The dataset (schema) a tenant project loads `layer` into: its override or `<project>_<layer>`.
    pub fn project_dataset(&self, project: &str, layer: &str) -> String {
        project_dataset(&self.projects, project, layer)
    }

    /// The defined schema DuckDB resolves `name` to (its own spelling first, then any spelling
    /// that differs only by case; validation refuses two such definitions), with its definition.
    pub fn schema(&self, name: &str) -> Option<(&str, &SchemaDef)> {
        self.schemas
            .get_key_value(name)
            .or_else(|| {
                self.schemas
                    .iter()
                    .find(|(defined, _)| super::names::same_name(defined, name))
            })
            .map(|(defined, def)| (defined.as_str(), def))
    }

    /// The most specific pattern that matches schema `name` (see [`SchemaPattern::matches`]).
    pub fn pattern(&self, name: &str) -> Option<&SchemaPattern> {
        self.patterns.iter().find(|p| p.matches(name))
    }

    /// Distinct layers of the defined schemas, sorted.
    pub fn layers(&self) -> Vec<String> {
        let set: BTreeSet<&String> = self.schemas.values().map(|s| &s.layer).collect();
        set.into_iter().cloned().collect()
    }

    /// The data path on the local file system, if it is local.
    pub fn local_data_path(&self) -> Option<&Path> {
        (!is_url(&self.data_path)).then(|| Path::new(&self.data_path))
    }
}

/// A rule's state and, when relaxed, the line that relaxed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub enabled: bool,
    /// Line of the explicit `key = ...` in `[rules]`, if any.
    pub line: Option<usize>,
}

impl Default for Rule {
    fn default() -> Self {
        Rule {
            enabled: true,
            line: None,
        }
    }
}

/// The safety rules of `[rules]` (see [`crate::rules`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rules {
    pub raw_append_only: Rule,
    pub raw_validated: Rule,
    pub single_writer: Rule,
}

/// A whole validated `srdp.toml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Absolute path of the file.
    pub path: PathBuf,
    pub catalogs: BTreeMap<String, CatalogDef>,
    pub rules: Rules,
}

impl Config {
    /// The catalog called `name`, or an error listing the defined ones.
    pub fn catalog(&self, name: &str) -> Result<&CatalogDef> {
        self.catalogs
            .get(name)
            .ok_or_else(|| SrdpError::UnknownCatalog {
                name: name.to_string(),
                path: self.path.clone(),
                known: self.known_catalogs(),
            })
    }

    /// Comma-separated catalog names, or `none`.
    pub fn known_catalogs(&self) -> String {
        if self.catalogs.is_empty() {
            "none".to_string()
        } else {
            self.catalogs.keys().cloned().collect::<Vec<_>>().join(", ")
        }
    }
}
