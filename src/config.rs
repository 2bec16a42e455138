//! `srdp.toml`: where it is found, how it is read, and what it means.
//!
//! Two layers, as in ruff: [`raw`] mirrors the file exactly (`deny_unknown_fields`, every field
//! optional where the file may omit it, spans kept for line numbers) and [`Config`] is the
//! validated meaning (absolute paths, backends, defaults applied from named constants). An
//! invalid value is an error naming the file, the line and the key; nothing falls back to a
//! default silently.
//!
//! The file is located by, first match wins: the function's `config :=` parameter, the
//! `srdp_config` setting, the `SRDP_CONFIG` environment variable, `./srdp.toml`. Relative paths
//! inside the file resolve against the file's own directory.

use crate::error::{Result, SrdpError};
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

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
/// Name of the file looked for in the working directory.
pub const DEFAULT_FILE_NAME: &str = "srdp.toml";

/// The raw layer: exactly what the file may contain.
pub mod raw {
    use serde::Deserialize;
    use std::collections::BTreeMap;
    use toml::Spanned;

    #[derive(Debug, Deserialize, Default)]
    #[serde(deny_unknown_fields)]
    pub struct File {
        /// Values every catalog inherits; each key has a built-in default.
        #[serde(default)]
        pub defaults: Tunables,
        /// One table per catalog, keyed by catalog name.
        #[serde(default)]
        pub catalogs: BTreeMap<String, Spanned<Catalog>>,
        /// Safety rules, all `true` unless a line here says `false`.
        #[serde(default)]
        pub rules: Rules,
    }

    /// Keys allowed both in `[defaults]` and in a catalog.
    #[derive(Debug, Deserialize, Default)]
    #[serde(deny_unknown_fields)]
    pub struct Tunables {
        /// Default 1000.
        pub data_inlining_row_limit: Option<Spanned<i64>>,
        /// Default 100000.
        pub pressure_warning_rows: Option<Spanned<i64>>,
        /// Default 1000 (the time budget decides).
        pub max_attempts: Option<Spanned<i64>>,
        /// Default 300.
        pub max_retry_seconds: Option<Spanned<i64>>,
        /// Default 100.
        pub retry_backoff_ms: Option<Spanned<i64>>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Catalog {
        /// Required: DuckDB file path, `sqlite:<path>` or `postgres:<libpq key=value>`.
        pub metadata: Spanned<String>,
        /// Default `main` (DuckDB file, SQLite) or `public` (PostgreSQL).
        pub metadata_schema: Option<Spanned<String>>,
        /// Required: local folder or `s3://bucket/prefix/`.
        pub data_path: Spanned<String>,
        /// Optional tenant project name.
        pub project: Option<Spanned<String>>,
        /// Optional DuckDB secret the writer role needs.
        pub writer_secret: Option<Spanned<String>>,
        /// Optional DuckDB secret the reader role uses.
        pub reader_secret: Option<Spanned<String>>,
        /// Default: `[defaults]`.
        pub data_inlining_row_limit: Option<Spanned<i64>>,
        /// Default: `[defaults]`.
        pub pressure_warning_rows: Option<Spanned<i64>>,
        /// Default: `[defaults]`.
        pub max_attempts: Option<Spanned<i64>>,
        /// Default: `[defaults]`.
        pub max_retry_seconds: Option<Spanned<i64>>,
        /// Default: `[defaults]`.
        pub retry_backoff_ms: Option<Spanned<i64>>,
        /// Schema ownership, keyed by schema name.
        #[serde(default)]
        pub schemas: BTreeMap<String, Spanned<Schema>>,
        /// Tenant projects beside `project`, keyed by project name.
        #[serde(default)]
        pub projects: BTreeMap<String, Spanned<Project>>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Schema {
        /// Required: the writer that owns the schema (a list only with `single_writer` off).
        pub writer: Spanned<Writers>,
        /// Required: landing | raw | curated | ...
        pub layer: Spanned<String>,
    }

    /// `writer = "dlt"` or `writer = ["dlt", "dbt"]`.
    #[derive(Debug, Deserialize)]
    #[serde(untagged)]
    pub enum Writers {
        One(String),
        Many(Vec<String>),
    }

    /// A tenant project's dataset names (default `<project>_<layer>`).
    #[derive(Debug, Deserialize, Default)]
    #[serde(deny_unknown_fields)]
    pub struct Project {
        pub raw_dataset: Option<Spanned<String>>,
        pub landing_dataset: Option<Spanned<String>>,
    }

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
}

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

/// The layers dlt may own while `single_writer` is on.
pub const DLT_LAYERS: [&str; 2] = ["landing", "raw"];

/// A tenant project's dataset-name overrides, keyed by layer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProjectDef {
    pub datasets: BTreeMap<String, String>,
}

/// The dataset `project` loads `layer` into: its override or `<project>_<layer>`.
fn project_dataset(projects: &BTreeMap<String, ProjectDef>, project: &str, layer: &str) -> String {
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
    pub project: Option<String>,
    pub writer_secret: Option<String>,
    pub reader_secret: Option<String>,
    pub tunables: Tunables,
    pub schemas: BTreeMap<String, SchemaDef>,
    /// Tenant projects: `project` (if set) and every `[catalogs.<c>.projects.<p>]`.
    pub projects: BTreeMap<String, ProjectDef>,
}

impl CatalogDef {
    /// The dataset (schema) a tenant project loads `layer` into: its override or `<project>_<layer>`.
    pub fn project_dataset(&self, project: &str, layer: &str) -> String {
        project_dataset(&self.projects, project, layer)
    }

    /// Distinct layers of the defined schemas, sorted.
    pub fn layers(&self) -> Vec<String> {
        let set: std::collections::BTreeSet<&String> =
            self.schemas.values().map(|s| &s.layer).collect();
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

/// Parses and validates the text of a file at `path` (used for line numbers and relative paths).
pub fn parse(path: &Path, text: &str) -> Result<Config> {
    // Syntax first: a file that is not TOML at all (a `.pgpass` passed by mistake) must not be
    // echoed, so its errors name a line, a column and at most a well-formed key.
    if let Err(e) = toml::from_str::<toml::Table>(text) {
        return Err(syntax_error(path, text, &e));
    }
    let file: raw::File = toml::from_str(text).map_err(|e| {
        let offset = e.span().map(|s| s.start).unwrap_or(0);
        invalid(path, text, offset, None, e.message().to_string())
    })?;
    let base = path.parent().unwrap_or(Path::new("/"));
    let rules = rules(text, &file.rules);
    let defaults = tunables(path, text, &Tunables::default(), &file.defaults, "defaults")?;
    let mut catalogs = BTreeMap::new();
    for (name, spanned) in &file.catalogs {
        let span = spanned.span();
        if name.trim().is_empty() {
            return Err(invalid(
                path,
                text,
                span.start,
                Some("catalogs".into()),
                "a catalog name must not be empty".into(),
            ));
        }
        let def = catalog(path, text, base, &defaults, &rules, name, spanned.get_ref())?;
        catalogs.insert(name.clone(), def);
    }
    Ok(Config {
        path: path.to_path_buf(),
        catalogs,
        rules,
    })
}

fn catalog(
    path: &Path,
    text: &str,
    base: &Path,
    defaults: &Tunables,
    rules: &Rules,
    name: &str,
    raw: &raw::Catalog,
) -> Result<CatalogDef> {
    let key = |k: &str| format!("catalogs.{name}.{k}");
    let err = |span: Range<usize>, k: &str, msg: String| {
        invalid(path, text, span.start, Some(key(k)), msg)
    };

    let metadata = raw.metadata.get_ref().trim();
    let backend = if metadata.is_empty() {
        return Err(err(raw.metadata.span(), "metadata", "must not be empty; give a DuckDB file path, \"sqlite:<path>\" or \"postgres:<libpq key=value>\"".into()));
    } else if let Some(rest) = metadata.strip_prefix("sqlite:") {
        Backend::Sqlite {
            path: resolve(
                base,
                non_empty(rest).ok_or_else(|| {
                    err(
                        raw.metadata.span(),
                        "metadata",
                        "\"sqlite:\" needs a file path after it".into(),
                    )
                })?,
            ),
        }
    } else if let Some(rest) = metadata.strip_prefix("postgres:") {
        let conninfo = non_empty(rest).ok_or_else(|| {
            err(raw.metadata.span(), "metadata", "\"postgres:\" needs libpq key=value pairs after it, such as \"dbname=lake host=127.0.0.1\"".into())
        })?;
        let parsed = crate::libpq::parse(conninfo).map_err(|e| {
            err(
                raw.metadata.span(),
                "metadata",
                format!("is not a libpq connection string after \"postgres:\": {e}"),
            )
        })?;
        if !parsed.secret_keys().is_empty() {
            return Err(err(raw.metadata.span(), "metadata", "contains a password; secrets never live in srdp.toml: put the credentials in a DuckDB secret and name it in writer_secret / reader_secret".into()));
        }
        Backend::Postgres {
            conninfo: conninfo.to_string(),
        }
    } else {
        let file = metadata.strip_prefix("duckdb:").unwrap_or(metadata);
        Backend::DuckDbFile {
            path: resolve(base, file),
        }
    };

    let metadata_schema = match (&raw.metadata_schema, &backend) {
        (Some(s), _) if s.get_ref().trim().is_empty() => {
            return Err(err(s.span(), "metadata_schema", "must not be empty".into()))
        }
        (Some(s), Backend::Sqlite { .. }) if s.get_ref() != DEFAULT_FILE_METADATA_SCHEMA => {
            return Err(err(s.span(), "metadata_schema", format!(
                "SQLite catalogs only have the schema \"main\", got \"{}\"; remove the key or set it to \"main\"",
                s.get_ref()
            )))
        }
        (Some(s), _) => s.get_ref().clone(),
        (None, Backend::Postgres { .. }) => DEFAULT_POSTGRES_METADATA_SCHEMA.to_string(),
        (None, _) => DEFAULT_FILE_METADATA_SCHEMA.to_string(),
    };

    let data_path = raw.data_path.get_ref().trim();
    if data_path.is_empty() {
        return Err(err(
            raw.data_path.span(),
            "data_path",
            "must not be empty; give a local folder or s3://bucket/prefix/".into(),
        ));
    }
    let data_path = if is_url(data_path) {
        with_trailing_slash(data_path.to_string())
    } else {
        with_trailing_slash(resolve(base, data_path).display().to_string())
    };

    let optional = |v: &Option<toml::Spanned<String>>, k: &str| -> Result<Option<String>> {
        match v {
            Some(s) if s.get_ref().trim().is_empty() => Err(err(
                s.span(),
                k,
                "must not be empty; remove the key instead".into(),
            )),
            Some(s) => Ok(Some(s.get_ref().clone())),
            None => Ok(None),
        }
    };

    let overrides = raw::Tunables {
        data_inlining_row_limit: raw.data_inlining_row_limit.clone(),
        pressure_warning_rows: raw.pressure_warning_rows.clone(),
        max_attempts: raw.max_attempts.clone(),
        max_retry_seconds: raw.max_retry_seconds.clone(),
        retry_backoff_ms: raw.retry_backoff_ms.clone(),
    };
    let relax = "or relax the rule with the line `single_writer = false` under [rules]";
    let mut schemas = BTreeMap::new();
    for (schema, s) in &raw.schemas {
        let s = s.get_ref();
        let writer_key = format!("schemas.{schema}.writer");
        let writers: Vec<String> = match s.writer.get_ref() {
            raw::Writers::One(w) => vec![w.clone()],
            raw::Writers::Many(ws) => ws.clone(),
        };
        if writers.is_empty() || writers.iter().any(|w| w.trim().is_empty()) {
            return Err(err(
                s.writer.span(),
                &writer_key,
                "must name a writer (such as \"dlt\", \"dbt\" or \"io_manager\")".into(),
            ));
        }
        if s.layer.get_ref().trim().is_empty() {
            return Err(err(
                s.layer.span(),
                &format!("schemas.{schema}.layer"),
                "must not be empty".into(),
            ));
        }
        let layer = s.layer.get_ref().clone();
        if rules.single_writer.enabled {
            if writers.len() > 1 {
                return Err(err(
                    s.writer.span(),
                    &writer_key,
                    format!(
                        "names {} writers ({}); with the single_writer rule on, a schema has \
                         exactly one writer. Keep one, {relax}",
                        writers.len(),
                        writers.join(", ")
                    ),
                ));
            }
            if writers[0] == "dlt" && !DLT_LAYERS.contains(&layer.as_str()) {
                return Err(err(
                    s.writer.span(),
                    &writer_key,
                    format!(
                        "dlt may only own landing or raw schemas while the single_writer rule is \
                         on, and schema '{schema}' has layer '{layer}'. Give it another writer, \
                         load with dlt into a landing or raw schema, {relax}"
                    ),
                ));
            }
        }
        schemas.insert(schema.clone(), SchemaDef { writers, layer });
    }

    let project = optional(&raw.project, "project")?;
    let mut projects = BTreeMap::new();
    if let Some(p) = &project {
        projects.insert(p.clone(), ProjectDef::default());
    }
    for (p, def) in &raw.projects {
        let mut datasets = BTreeMap::new();
        for (layer, v) in [
            ("raw", &def.get_ref().raw_dataset),
            ("landing", &def.get_ref().landing_dataset),
        ] {
            if let Some(v) = v {
                if v.get_ref().trim().is_empty() {
                    return Err(err(
                        v.span(),
                        &format!("projects.{p}.{layer}_dataset"),
                        "must not be empty; remove the key to use the default".into(),
                    ));
                }
                datasets.insert(layer.to_string(), v.get_ref().clone());
            }
        }
        projects.insert(p.clone(), ProjectDef { datasets });
    }
    // Two projects must never load into the same dataset.
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    for p in projects.keys() {
        for layer in DLT_LAYERS {
            let dataset = project_dataset(&projects, p, layer);
            if let Some(other) = seen.insert(dataset.clone(), p.clone()) {
                return Err(err(
                    raw.projects.get(p).map_or(0..0, |d| d.span()),
                    &format!("projects.{p}"),
                    format!(
                        "projects '{other}' and '{p}' would both load into dataset '{dataset}'; \
                         give one of them another {layer}_dataset"
                    ),
                ));
            }
        }
    }

    Ok(CatalogDef {
        name: name.to_string(),
        backend,
        metadata_schema,
        data_path,
        project,
        writer_secret: optional(&raw.writer_secret, "writer_secret")?,
        reader_secret: optional(&raw.reader_secret, "reader_secret")?,
        tunables: tunables(
            path,
            text,
            defaults,
            &overrides,
            &format!("catalogs.{name}"),
        )?,
        schemas,
        projects,
    })
}

fn tunables(
    path: &Path,
    text: &str,
    base: &Tunables,
    raw: &raw::Tunables,
    table: &str,
) -> Result<Tunables> {
    let check =
        |v: &Option<toml::Spanned<i64>>, k: &str, min: i64, max: i64| -> Result<Option<i64>> {
            match v {
                None => Ok(None),
                Some(s) if (min..=max).contains(s.get_ref()) => Ok(Some(*s.get_ref())),
                Some(s) => Err(invalid(
                    path,
                    text,
                    s.span().start,
                    Some(format!("{table}.{k}")),
                    format!("must be between {min} and {max}, got {}", s.get_ref()),
                )),
            }
        };
    Ok(Tunables {
        data_inlining_row_limit: check(
            &raw.data_inlining_row_limit,
            "data_inlining_row_limit",
            0,
            1_000_000_000,
        )?
        .map_or(base.data_inlining_row_limit, |v| v as u64),
        pressure_warning_rows: check(
            &raw.pressure_warning_rows,
            "pressure_warning_rows",
            0,
            i64::MAX,
        )?
        .map_or(base.pressure_warning_rows, |v| v as u64),
        max_attempts: check(&raw.max_attempts, "max_attempts", 1, 100_000)?
            .map_or(base.max_attempts, |v| v as u32),
        max_retry_seconds: check(&raw.max_retry_seconds, "max_retry_seconds", 0, 86_400)?
            .map_or(base.max_retry_seconds, |v| v as u64),
        retry_backoff_ms: check(&raw.retry_backoff_ms, "retry_backoff_ms", 0, 60_000)?
            .map_or(base.retry_backoff_ms, |v| v as u64),
    })
}

fn rules(text: &str, raw: &raw::Rules) -> Rules {
    let rule = |v: &Option<toml::Spanned<bool>>| match v {
        None => Rule::default(),
        Some(s) => Rule {
            enabled: *s.get_ref(),
            line: Some(line_of(text, s.span().start)),
        },
    };
    Rules {
        raw_append_only: rule(&raw.raw_append_only),
        raw_validated: rule(&raw.raw_validated),
        single_writer: rule(&raw.single_writer),
    }
}

/// An error at byte `offset` of `text`; the key is taken from the line when not known.
fn invalid(
    path: &Path,
    text: &str,
    offset: usize,
    key: Option<String>,
    message: String,
) -> SrdpError {
    let line = line_of(text, offset);
    let key = key.or_else(|| key_at(text, offset));
    SrdpError::ConfigInvalid {
        path: path.to_path_buf(),
        line,
        key: key.map(|k| format!("key '{k}': ")).unwrap_or_default(),
        message,
    }
}

/// A TOML syntax error at its line and column. The key is shown only when the line starts with
/// a well-formed key or table header; no other text of the line is ever shown.
fn syntax_error(path: &Path, text: &str, e: &toml::de::Error) -> SrdpError {
    let offset = e.span().map(|s| s.start).unwrap_or(0).min(text.len());
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let column = text[line_start..offset].chars().count() + 1;
    let key = key_at(text, offset).filter(|k| is_plain_key(k));
    SrdpError::ConfigInvalid {
        path: path.to_path_buf(),
        line: line_of(text, offset),
        key: key.map(|k| format!("key '{k}': ")).unwrap_or_default(),
        message: format!("column {column}: {}", e.message().trim()),
    }
}

/// A dotted key of bare TOML key characters (`catalogs.lake.data_path`).
fn is_plain_key(key: &str) -> bool {
    !key.is_empty()
        && key.split('.').all(|part| {
            let part = part.trim();
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        })
}

/// 1-based line number of a byte offset.
pub fn line_of(text: &str, offset: usize) -> usize {
    let offset = offset.min(text.len());
    text.as_bytes()[..offset]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The dotted key written on the line of `offset` (`catalogs.lake.max_attempts`), if any.
fn key_at(text: &str, offset: usize) -> Option<String> {
    let offset = offset.min(text.len());
    let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line = text[start..].lines().next().unwrap_or("").trim();
    let table = |l: &str| {
        l.trim_start_matches('[')
            .trim_end_matches(']')
            .trim()
            .to_string()
    };
    if line.starts_with('[') {
        return Some(table(line));
    }
    let key = line.split('=').next()?.trim();
    if key.is_empty() || key.starts_with('#') {
        return None;
    }
    let header = text[..start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .map(table);
    Some(match header {
        Some(h) => format!("{h}.{key}"),
        None => key.to_string(),
    })
}

fn non_empty(s: &str) -> Option<&str> {
    let s = s.trim();
    (!s.is_empty()).then_some(s)
}

/// `s3://...`, `gs://...`, `file://...` and the like.
pub fn is_url(s: &str) -> bool {
    match s.find("://") {
        Some(i) => {
            i > 0
                && s[..i]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '+')
        }
        None => false,
    }
}

fn with_trailing_slash(mut s: String) -> String {
    if !s.ends_with('/') {
        s.push('/');
    }
    s
}

/// `p` made absolute against `base` and normalised lexically (`.` and `..` removed).
pub fn resolve(base: &Path, p: &str) -> PathBuf {
    let joined = base.join(p);
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

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

#[cfg(test)]
mod tests;
