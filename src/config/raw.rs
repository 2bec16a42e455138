//! The raw layer: exactly what `srdp.toml` may contain, and nothing else.
//!
//! Every table denies unknown keys, every key the file may omit is an `Option` (or an empty map),
//! and every value keeps its span so that validation ([`super::parse`]) can name the line it came
//! from. No default is applied here: each field's doc says which default validation applies (the
//! named constants are re-exported by [`super`]).

use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

/// The whole file.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct File {
    /// `[defaults]`: values every catalog inherits. Default: an empty table, so each key takes
    /// its built-in default.
    #[serde(default)]
    pub defaults: Tunables,
    /// `[catalogs.<name>]`: one table per catalog, keyed by catalog name. Default: no catalogs.
    #[serde(default)]
    pub catalogs: BTreeMap<String, Spanned<Catalog>>,
    /// `[rules]`: the safety rules. Default: an empty table, so every rule is on.
    #[serde(default)]
    pub rules: Rules,
    /// `[custom]`: writers and layers beyond the built-in ones. Default: none.
    #[serde(default)]
    pub custom: Custom,
}

/// `[custom]`: the names a schema entry may use beyond the built-in ones.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Custom {
    /// Default: none. Writers beyond `dbt`, `dlt` and `io_manager` ([`super::BUILTIN_WRITERS`]).
    #[serde(default)]
    pub writers: Vec<Spanned<String>>,
    /// Default: none. Layers beyond `curated`, `intermediate`, `marts`, `raw`, `serving` and
    /// `staging` ([`super::BUILTIN_LAYERS`]); never `landing`.
    #[serde(default)]
    pub layers: Vec<Spanned<String>>,
}

/// Keys allowed both in `[defaults]` and in a catalog.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Tunables {
    /// Default 1000 ([`super::DEFAULT_DATA_INLINING_ROW_LIMIT`]); 0 to 1 000 000 000.
    pub data_inlining_row_limit: Option<Spanned<i64>>,
    /// Default 100000 ([`super::DEFAULT_PRESSURE_WARNING_ROWS`]); 0 or more.
    pub pressure_warning_rows: Option<Spanned<i64>>,
    /// Default 1000 ([`super::DEFAULT_MAX_ATTEMPTS`]; the time budget decides); 1 to 100 000.
    pub max_attempts: Option<Spanned<i64>>,
    /// Default 300 ([`super::DEFAULT_MAX_RETRY_SECONDS`]); 0 to 86 400.
    pub max_retry_seconds: Option<Spanned<i64>>,
    /// Default 100 ([`super::DEFAULT_RETRY_BACKOFF_MS`]); 0 to 60 000.
    pub retry_backoff_ms: Option<Spanned<i64>>,
}

/// One `[catalogs.<name>]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Catalog {
    /// Required, no default: a DuckDB file path (optionally `duckdb:<path>`), `sqlite:<path>`
    /// or `postgres:<libpq key=value>`.
    pub metadata: Spanned<String>,
    /// Default `main` (DuckDB file, SQLite; [`super::DEFAULT_FILE_METADATA_SCHEMA`]) or `public`
    /// (PostgreSQL; [`super::DEFAULT_POSTGRES_METADATA_SCHEMA`]).
    pub metadata_schema: Option<Spanned<String>>,
    /// Required, no default: a local folder or `s3://bucket/prefix/`.
    pub data_path: Spanned<String>,
    /// Default: none. The landing zone, a folder outside DuckLake that dlt's filesystem
    /// destination writes: a local folder (relative to this file, like `data_path`) or
    /// `s3://bucket/prefix/`; never inside a data path, nor containing one.
    pub landing_path: Option<Spanned<String>>,
    /// Default `raw` ([`super::DEFAULT_PROMOTE_INTO`]) when `landing_path` is set; an error
    /// without it. The schema loads promoted from the landing zone are appended to: a raw schema
    /// the IO manager owns.
    pub promote_into: Option<Spanned<String>>,
    /// Default: none. The catalog's tenant project.
    pub project: Option<Spanned<String>>,
    /// Default: none. The DuckDB secret the writer role needs.
    pub writer_secret: Option<Spanned<String>>,
    /// Default: none. The DuckDB secret the reader role uses.
    pub reader_secret: Option<Spanned<String>>,
    /// Default: the value in `[defaults]`.
    pub data_inlining_row_limit: Option<Spanned<i64>>,
    /// Default: the value in `[defaults]`.
    pub pressure_warning_rows: Option<Spanned<i64>>,
    /// Default: the value in `[defaults]`.
    pub max_attempts: Option<Spanned<i64>>,
    /// Default: the value in `[defaults]`.
    pub max_retry_seconds: Option<Spanned<i64>>,
    /// Default: the value in `[defaults]`.
    pub retry_backoff_ms: Option<Spanned<i64>>,
    /// `[catalogs.<c>.schemas.<s>]`: schema ownership, keyed by schema name. Default: none.
    #[serde(default)]
    pub schemas: BTreeMap<String, Spanned<Schema>>,
    /// `[catalogs.<c>.projects.<p>]`: tenant projects beside `project`, keyed by project name.
    /// Default: none.
    #[serde(default)]
    pub projects: BTreeMap<String, Spanned<Project>>,
}

impl Catalog {
    /// The catalog's own tunables, as a `[defaults]` table would hold them.
    pub fn tunables(&self) -> Tunables {
        Tunables {
            data_inlining_row_limit: self.data_inlining_row_limit.clone(),
            pressure_warning_rows: self.pressure_warning_rows.clone(),
            max_attempts: self.max_attempts.clone(),
            max_retry_seconds: self.max_retry_seconds.clone(),
            retry_backoff_ms: self.retry_backoff_ms.clone(),
        }
    }
}

/// One `[catalogs.<c>.schemas.<s>]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Schema {
    /// Required, no default: the writer that owns the schema (a list only with `single_writer`
    /// off): a built-in writer or one declared under `[custom] writers`.
    pub writer: Spanned<Writers>,
    /// Required, no default: a built-in layer (raw, staging, intermediate, curated, marts,
    /// serving) or one declared under `[custom] layers`; never `landing` (the landing zone is
    /// `landing_path`, a folder outside DuckLake).
    pub layer: Spanned<String>,
}

/// `writer = "dlt"` or `writer = ["dlt", "dbt"]`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Writers {
    /// `writer = "dlt"`.
    One(String),
    /// `writer = ["dlt", "dbt"]`.
    Many(Vec<String>),
}

/// One `[catalogs.<c>.projects.<p>]` table: a tenant project's dataset names.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Project {
    /// Default `<project>_raw`.
    pub raw_dataset: Option<Spanned<String>>,
    /// Default `<project>_landing`: the project's folder inside `landing_path`.
    pub landing_dataset: Option<Spanned<String>>,
}

/// `[rules]`.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Rules {
    /// Default true.
    pub raw_append_only: Option<Spanned<bool>>,
    /// Default true.
    pub raw_validated: Option<Spanned<bool>>,
    /// Default true.
    pub single_writer: Option<Spanned<bool>>,
}
