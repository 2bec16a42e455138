//! Who may write where, and what a dlt load must look like (pure: config in, decisions out).
//!
//! The three safety rules are on unless `srdp.toml` relaxes one with a visible line under
//! `[rules]`; every relaxation is reported with that line, and every load that runs with a rule
//! off gets one warning per relaxed rule. Schema ownership comes from
//! `[catalogs.<c>.schemas.<s>]`; a tenant project's datasets (`<project>_<layer>`) take the owner
//! of the catalog's schemas of that layer.

use crate::config::{Backend, CatalogDef, Config, Rule};
use crate::error::{Result, SrdpError};

/// One safety rule: its key under `[rules]`, and why it exists in a reviewer's words.
#[derive(Debug, PartialEq, Eq)]
pub struct RuleInfo {
    pub name: &'static str,
    pub why: &'static str,
    pub cost_if_relaxed: &'static str,
}

/// The rules, in the order `srdp_rules` lists them.
pub const RULES: [RuleInfo; 3] = [
    RuleInfo {
        name: "raw_append_only",
        why: "raw keeps a complete audit trail and curated layers can always be rebuilt from it",
        cost_if_relaxed:
            "the audit trail and rebuild from raw are lost for those tables; dropping \
                          a table also resets dlt's incremental state",
    },
    RuleInfo {
        name: "raw_validated",
        why: "unconforming data is caught before it reaches the lake while sources can still add \
              fields",
        cost_if_relaxed: "a type mismatch silently adds a variant column (such as \
                          `amount__v_text`) instead of failing",
    },
    RuleInfo {
        name: "single_writer",
        why: "dlt cannot load into tables another writer created, and Dagster models one asset \
              per data object",
        cost_if_relaxed: "a mix-up fails during the load instead of before it",
    },
];

/// The state of one rule as `srdp_rules` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleState {
    pub info: &'static RuleInfo,
    pub enabled: bool,
    /// `default`, or `<file>:<line>` of the line that sets it.
    pub source: String,
}

fn rule_of<'a>(config: &'a Config, name: &str) -> &'a Rule {
    match name {
        "raw_append_only" => &config.rules.raw_append_only,
        "raw_validated" => &config.rules.raw_validated,
        _ => &config.rules.single_writer,
    }
}

/// Every rule with its state and source.
pub fn states(config: &Config) -> Vec<RuleState> {
    RULES
        .iter()
        .map(|info| {
            let rule = rule_of(config, info.name);
            RuleState {
                info,
                enabled: rule.enabled,
                source: match rule.line {
                    Some(line) => format!("{}:{line}", config.path.display()),
                    None => "default".to_string(),
                },
            }
        })
        .collect()
}

/// One warning per relaxed rule, to be logged on every load.
pub fn relaxed_warnings(config: &Config) -> Vec<String> {
    relaxed_warnings_except(config, None)
}

/// [`relaxed_warnings`] without the rule named `skip`.
fn relaxed_warnings_except(config: &Config, skip: Option<&str>) -> Vec<String> {
    states(config)
        .into_iter()
        .filter(|s| !s.enabled && Some(s.info.name) != skip)
        .map(|s| {
            format!(
                "srdp rule {} is relaxed by {}: {}",
                s.info.name, s.source, s.info.cost_if_relaxed
            )
        })
        .collect()
}

/// The outcome of a writer check that allowed the write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriterCheck {
    /// The owners of the schema (`None` when the definition names none).
    pub owner: Option<String>,
    pub layer: Option<String>,
    /// Set when the write is allowed only because `single_writer` is relaxed.
    pub warning: Option<String>,
}

/// Writers and layer of `schema`: its own entry, or the layer's entry for a tenant dataset.
fn ownership(def: &CatalogDef, schema: &str) -> Option<(Vec<String>, String)> {
    if let Some(s) = def.schemas.get(schema) {
        return Some((s.writers.clone(), s.layer.clone()));
    }
    for project in def.projects.keys() {
        for layer in def.layers() {
            if def.project_dataset(project, &layer) == schema {
                let mut writers: Vec<String> = def
                    .schemas
                    .values()
                    .filter(|s| s.layer == layer)
                    .flat_map(|s| s.writers.iter().cloned())
                    .collect();
                writers.sort();
                writers.dedup();
                return Some((writers, layer));
            }
        }
    }
    None
}

/// Every writer named in the catalog's schemas, sorted.
fn writers(def: &CatalogDef) -> Vec<String> {
    let mut all: Vec<String> = def
        .schemas
        .values()
        .flat_map(|s| s.writers.iter().cloned())
        .collect();
    all.sort();
    all.dedup();
    all
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join(", ")
    }
}

/// May `writer` write `schema` of `catalog`? An error says who owns it and how to relax the rule.
pub fn check_writer(
    config: &Config,
    catalog: &str,
    schema: &str,
    writer: &str,
) -> Result<WriterCheck> {
    let def = config.catalog(catalog)?;
    let known = writers(def);
    if !known.iter().any(|w| w == writer) {
        return Err(SrdpError::UnknownName {
            what: "writer",
            name: writer.to_string(),
            catalog: catalog.to_string(),
            path: config.path.clone(),
            known: format!(
                "(writers: {}); name it as the writer of a schema under \
                 [catalogs.{catalog}.schemas.<schema>]",
                list(&known)
            ),
        });
    }
    let owned = ownership(def, schema);
    let relaxed = !config.rules.single_writer.enabled;
    let may_write = || {
        let mut schemas: Vec<String> = def
            .schemas
            .iter()
            .filter(|(_, s)| s.writers.iter().any(|w| w == writer))
            .map(|(name, _)| name.clone())
            .collect();
        for project in def.projects.keys() {
            for (_, s) in def
                .schemas
                .iter()
                .filter(|(_, s)| s.writers.iter().any(|w| w == writer))
            {
                schemas.push(def.project_dataset(project, &s.layer));
            }
        }
        schemas.sort();
        schemas.dedup();
        list(&schemas)
    };
    let refused = |why: String| SrdpError::WriterRefused {
        writer: writer.to_string(),
        schema: schema.to_string(),
        catalog: catalog.to_string(),
        why: format!("{why}. '{writer}' may write: {}", may_write()),
        path: config.path.clone(),
    };
    let source = || {
        config
            .rules
            .single_writer
            .line
            .map(|l| format!("{}:{l}", config.path.display()))
            .unwrap_or_default()
    };
    match owned {
        Some((owners, layer)) if owners.iter().any(|w| w == writer) => Ok(WriterCheck {
            owner: Some(owners.join(", ")),
            layer: Some(layer),
            warning: None,
        }),
        Some((owners, layer)) => {
            if !relaxed {
                return Err(refused(format!(
                    "it is owned by '{}' (single_writer)",
                    owners.join(", ")
                )));
            }
            Ok(WriterCheck {
                warning: Some(format!(
                    "srdp rule single_writer is relaxed by {}: writer '{writer}' writes schema \
                     '{schema}' owned by '{}'",
                    source(),
                    owners.join(", ")
                )),
                owner: Some(owners.join(", ")),
                layer: Some(layer),
            })
        }
        None => {
            if !relaxed {
                return Err(refused(format!(
                    "it has no owner in the definition; define \
                     [catalogs.{catalog}.schemas.{schema}] with writer and layer"
                )));
            }
            Ok(WriterCheck {
                owner: None,
                layer: None,
                warning: Some(format!(
                    "srdp rule single_writer is relaxed by {}: writer '{writer}' writes schema \
                     '{schema}', which has no owner in the definition",
                    source()
                )),
            })
        }
    }
}

/// What the caller of `srdp_dlt_destination` asked for (`None` = not given).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DltRequest {
    pub layer: Option<String>,
    pub schema_name: Option<String>,
    pub project: Option<String>,
    pub writer: Option<String>,
}

/// Everything dlt's `ducklake` destination needs to attach the very lake srdp attaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DltDestination {
    pub catalog: String,
    /// The ATTACH alias (dlt's `ducklake_name`): the catalog name.
    pub attach_name: String,
    /// dlt's `catalog` credential, never with a password.
    pub catalog_url: String,
    /// Only for server catalogs, where dlt passes `METADATA_SCHEMA` (defaulting to its own name).
    pub metadata_schema: Option<String>,
    pub storage_url: String,
    pub dataset_name: String,
    pub layer: String,
    pub writer: String,
    pub owner: Option<String>,
    /// `append` while `raw_append_only` is on (raw layer); `None` = the resource's own.
    pub write_disposition: Option<String>,
    /// dlt's schema contract as JSON while `raw_validated` is on (raw layer).
    pub schema_contract: Option<String>,
    pub data_inlining_row_limit: u64,
    pub warnings: Vec<String>,
}

/// The default layer of `srdp_dlt_destination`.
pub const DEFAULT_DLT_LAYER: &str = "raw";
/// The default writer of `srdp_dlt_destination`.
pub const DEFAULT_DLT_WRITER: &str = "dlt";

/// Plans dlt's destination for one load from the definition.
pub fn dlt_destination(
    config: &Config,
    catalog: &str,
    request: &DltRequest,
) -> Result<DltDestination> {
    let def = config.catalog(catalog)?;
    if matches!(def.backend, Backend::DuckDbFile { .. })
        && def.metadata_schema != crate::config::DEFAULT_FILE_METADATA_SCHEMA
    {
        // dlt passes METADATA_SCHEMA only for server catalogs: it would create a second lake in
        // `main` of the same file instead of loading into this one.
        return Err(SrdpError::InvalidArgument(format!(
            "catalog '{catalog}' keeps its metadata in schema '{}' of a DuckDB file, and dlt \
             attaches DuckDB-file catalogs without METADATA_SCHEMA, so it would load into a \
             second lake in schema 'main'. Use metadata_schema = \"main\" (the default) for \
             catalogs dlt loads, or a SQLite or PostgreSQL catalog",
            def.metadata_schema
        )));
    }
    let writer = request
        .writer
        .clone()
        .unwrap_or_else(|| DEFAULT_DLT_WRITER.into());
    let unknown =
        |what: &'static str, name: &str, known: String, hint: String| SrdpError::UnknownName {
            what,
            name: name.to_string(),
            catalog: catalog.to_string(),
            path: config.path.clone(),
            known: format!("({known}){hint}"),
        };
    let project = match &request.project {
        Some(p) if !def.projects.contains_key(p) => {
            let known: Vec<String> = def.projects.keys().cloned().collect();
            return Err(unknown(
                "project",
                p,
                format!("projects: {}", list(&known)),
                format!("; set project = \"{p}\" or add [catalogs.{catalog}.projects.{p}]"),
            ));
        }
        Some(p) => Some(p.clone()),
        None => def.project.clone(),
    };
    let layer_known = |layer: &str| -> Result<()> {
        if def.layers().iter().any(|l| l == layer) {
            Ok(())
        } else {
            Err(unknown(
                "layer",
                layer,
                format!("layers: {}", list(&def.layers())),
                format!(
                    "; define a schema with layer = \"{layer}\" under [catalogs.{catalog}.schemas.<schema>]"
                ),
            ))
        }
    };
    let (dataset, layer) = match (&request.schema_name, &request.layer) {
        (Some(schema), layer) => {
            let owned = ownership(def, schema).map(|(_, l)| l);
            if let (Some(given), Some(actual)) = (layer, &owned) {
                if given != actual {
                    return Err(SrdpError::InvalidArgument(format!(
                        "schema '{schema}' of catalog '{catalog}' has layer '{actual}', not \
                         '{given}'; leave out layer := or pass layer := '{actual}'"
                    )));
                }
            }
            let layer = owned
                .or_else(|| layer.clone())
                .unwrap_or_else(|| DEFAULT_DLT_LAYER.into());
            (schema.clone(), layer)
        }
        (None, layer) => {
            let layer = layer.clone().unwrap_or_else(|| DEFAULT_DLT_LAYER.into());
            layer_known(&layer)?;
            match &project {
                Some(p) => (def.project_dataset(p, &layer), layer),
                None => {
                    let of_layer: Vec<String> = def
                        .schemas
                        .iter()
                        .filter(|(_, s)| s.layer == layer)
                        .map(|(name, _)| name.clone())
                        .collect();
                    // Of several schemas of that layer, the one the writer owns.
                    let mut chosen = of_layer.clone();
                    if chosen.len() > 1 {
                        chosen.retain(|name| def.schemas[name].writers.contains(&writer));
                    }
                    match chosen.as_slice() {
                        [one] => (one.clone(), layer),
                        _ => {
                            return Err(SrdpError::InvalidArgument(format!(
                                "catalog '{catalog}' has several schemas of layer '{layer}' ({}); \
                                 pass schema_name := to choose one",
                                list(&of_layer)
                            )))
                        }
                    }
                }
            }
        }
    };
    let check = check_writer(config, catalog, &dataset, &writer)?;
    let raw = layer == "raw";
    // One warning per relaxed rule; the single_writer one names the schema when the write is
    // allowed only because that rule is relaxed.
    let mut warnings =
        relaxed_warnings_except(config, check.warning.is_some().then_some("single_writer"));
    warnings.extend(check.warning);
    Ok(DltDestination {
        catalog: def.name.clone(),
        attach_name: def.name.clone(),
        catalog_url: catalog_url(&def.backend),
        metadata_schema: matches!(def.backend, Backend::Postgres { .. })
            .then(|| def.metadata_schema.clone()),
        storage_url: storage_url(&def.data_path),
        dataset_name: dataset,
        layer,
        writer,
        owner: check.owner,
        write_disposition: (raw && config.rules.raw_append_only.enabled)
            .then(|| "append".to_string()),
        schema_contract: (raw && config.rules.raw_validated.enabled)
            .then(|| r#"{"data_type": "freeze"}"#.to_string()),
        data_inlining_row_limit: def.tunables.data_inlining_row_limit,
        warnings,
    })
}

/// dlt's `catalog` credential for a backend (SQLAlchemy-style URL, no password).
pub fn catalog_url(backend: &Backend) -> String {
    match backend {
        Backend::Sqlite { path } => format!("sqlite:///{}", path.display()),
        Backend::DuckDbFile { path } => format!("duckdb:///{}", path.display()),
        Backend::Postgres { conninfo } => postgres_url(conninfo),
    }
}

/// `dbname=lake host=h port=5432 user=u sslmode=require` -> `postgres://u@h:5432/lake?sslmode=require`,
/// read with libpq's own rules; every part is percent-encoded and a password (which the
/// definition refuses anyway) is never carried over.
pub fn postgres_url(conninfo: &str) -> String {
    let parsed = crate::libpq::parse(conninfo).unwrap_or_default();
    let mut user = None;
    let mut host = None;
    let mut port = None;
    let mut dbname = None;
    let mut rest = Vec::new();
    for (k, v) in &parsed.pairs {
        match k.as_str() {
            "user" => user = Some(v),
            "host" | "hostaddr" => host = Some(v),
            "port" => port = Some(v),
            "dbname" => dbname = Some(v),
            k if k.eq_ignore_ascii_case("password") || k.eq_ignore_ascii_case("sslpassword") => {}
            _ => rest.push(format!("{}={}", percent_encode(k), percent_encode(v))),
        }
    }
    let mut url = "postgres://".to_string();
    if let Some(u) = user {
        url.push_str(&percent_encode(u));
        url.push('@');
    }
    match host {
        // An IPv6 address keeps its brackets; a socket directory or a name is encoded.
        Some(h) if h.starts_with('[') => url.push_str(h),
        Some(h) => url.push_str(&percent_encode(h)),
        None => url.push_str("localhost"),
    }
    if let Some(p) = port {
        url.push(':');
        url.push_str(&percent_encode(p));
    }
    url.push('/');
    url.push_str(&dbname.map(|d| percent_encode(d)).unwrap_or_default());
    if !rest.is_empty() {
        url.push('?');
        url.push_str(&rest.join("&"));
    }
    url
}

/// RFC 3986 percent-encoding of everything but unreserved characters.
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// dlt's storage URL for a data path: `file://` + the absolute path, or the object-store URL.
pub fn storage_url(data_path: &str) -> String {
    if data_path.starts_with('/') {
        format!("file://{data_path}")
    } else {
        data_path.to_string()
    }
}

/// The fully qualified physical name lineage uses: `<catalog>.<schema>.<table>`.
pub fn table_name(catalog: &str, schema: &str, table: &str) -> String {
    format!("{catalog}.{schema}.{table}")
}

#[cfg(test)]
mod tests;
