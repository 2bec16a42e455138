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
//!
//! | room | owns |
//! |---|---|
//! | [`raw`] | the serde layer: every key the file may hold, each with its default documented |
//! | `model` | the validated types ([`Config`], [`CatalogDef`], ...) and named defaults |
//! | `validate` | raw to model ([`parse`]): one function per part of a catalog |
//! | `landing` | the landing zone: `landing_path` and `promote_into`, checked against data paths and schemas |
//! | `locate` | finding the file ([`locate`], [`Sources`]), loading it once per change ([`load`]) |
//! | `span` | lines, columns and keys of errors ([`line_of`]) |
//! | `locations` | one spelling per folder or S3 prefix ([`canonical`]), which overlap checks compare |
//! | `names` | schema and catalog names compared as DuckDB resolves them ([`same_name`]) |
//! | `patterns` | schema patterns (`"dbt_*"`): what a prefix matches ([`SchemaPattern`]), which overlap |
//! | `prefix_index` | names sorted for prefix queries ([`PrefixIndex`]): the pattern checks in `O(n log n)` |
//! | `vocabulary` | the closed sets of writers and layers (built-in plus `[custom]`), and "did you mean" |
//! | `paths` | URLs told from local paths ([`is_url`]), paths made absolute ([`resolve`]) |
//!
//! The single_writer rule's verdict on a schema definition is [`crate::rules`]' own.

mod landing;
mod locate;
mod locations;
mod model;
mod names;
mod paths;
mod patterns;
mod prefix_index;
pub mod raw;
mod span;
mod validate;
mod vocabulary;

pub use locate::{load, locate, Sources, DEFAULT_FILE_NAME};
pub use locations::{canonical, comparable};
pub use model::{
    Backend, CatalogDef, Config, ProjectDef, Rule, Rules, SchemaDef, Tunables,
    DEFAULT_DATA_INLINING_ROW_LIMIT, DEFAULT_FILE_METADATA_SCHEMA, DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_RETRY_SECONDS, DEFAULT_POSTGRES_METADATA_SCHEMA, DEFAULT_PRESSURE_WARNING_ROWS,
    DEFAULT_PROMOTE_INTO, DEFAULT_RETRY_BACKOFF_MS, DLT_LAYER, LANDING_LAYER,
    SQLITE_BUSY_TIMEOUT_MS,
};
pub use names::{folded, same_name};
pub use paths::{is_url, resolve};
pub use patterns::{
    cut, is_pattern, overlap as patterns_overlap, shared_name, SchemaPattern, IDENTIFIER_BYTES,
    WILDCARD,
};
pub use prefix_index::PrefixIndex;
pub use span::line_of;
pub use validate::parse;
pub use vocabulary::{BUILTIN_LAYERS, BUILTIN_WRITERS};

#[cfg(test)]
mod tests;
