//! What a dlt load must look like: the destination `srdp_dlt_destination` plans for one load
//! (dlt's `ducklake` destination into a schema, or its `filesystem` destination into the landing
//! zone), and the URLs and names dlt and lineage see.

use super::single_writer::{
    check_landing_writer, check_writer, ownership, tenant_dataset, LANDING_OWNER,
};
use super::{list, relaxed_warnings_except, SINGLE_WRITER};
use crate::config::{
    Backend, CatalogDef, Config, DEFAULT_FILE_METADATA_SCHEMA, DLT_LAYER, LANDING_LAYER,
};
use crate::error::{Result, SrdpError};

/// What the caller of `srdp_dlt_destination` asked for (`None` = not given).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DltRequest {
    pub layer: Option<String>,
    pub schema_name: Option<String>,
    pub project: Option<String>,
    pub writer: Option<String>,
}

/// Everything dlt's `ducklake` destination needs to attach the very lake srdp attaches, or
/// its `filesystem` destination needs to write the catalog's landing zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DltDestination {
    pub catalog: String,
    /// The ATTACH alias (dlt's `ducklake_name`): the catalog name.
    pub attach_name: String,
    /// dlt's `catalog` credential, never with a password; `None` for the landing zone.
    pub catalog_url: Option<String>,
    /// Only for server catalogs, where dlt passes `METADATA_SCHEMA` (defaulting to its own name).
    pub metadata_schema: Option<String>,
    /// dlt's bucket URL: the data path, or the landing path for the landing zone.
    pub storage_url: String,
    /// The schema, or the folder inside the landing path.
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
    /// `ducklake` ([`DUCKLAKE`]) or `filesystem` ([`FILESYSTEM`], the landing zone).
    pub destination_type: String,
    /// The landing zone's file format ([`LANDING_FILE_FORMAT`]); `None` for ducklake.
    pub file_format: Option<String>,
    /// The landing zone's file layout ([`LANDING_LAYOUT`]); `None` for ducklake.
    pub layout: Option<String>,
    /// The dataset loads promoted from the landing zone go into; `None` for ducklake.
    pub promote_into: Option<String>,
}

/// `destination_type` of a load into a DuckLake schema.
pub const DUCKLAKE: &str = "ducklake";
/// `destination_type` of a load into the landing zone.
pub const FILESYSTEM: &str = "filesystem";
/// The file format dlt writes into the landing zone.
pub const LANDING_FILE_FORMAT: &str = "parquet";
/// dlt's file layout in the landing zone: one folder per table, one file per load and job.
pub const LANDING_LAYOUT: &str = "{table_name}/{load_id}.{file_id}.{ext}";

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
    let writer = request
        .writer
        .clone()
        .unwrap_or_else(|| DEFAULT_DLT_WRITER.into());
    if request.layer.as_deref() == Some(LANDING_LAYER) {
        let project = project_of(config, def, request)?;
        return landing_destination(config, def, request, writer, project);
    }
    if matches!(def.backend, Backend::DuckDbFile { .. })
        && def.metadata_schema != DEFAULT_FILE_METADATA_SCHEMA
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
    let project = project_of(config, def, request)?;
    // The layers a load may name: the schemas', and the landing zone's when there is one.
    let mut layers = def.layers();
    if def.landing_path.is_some() {
        layers.push(LANDING_LAYER.to_string());
        layers.sort();
    }
    let layer_known = |layer: &str| -> Result<()> {
        if def.layers().iter().any(|l| l == layer) {
            Ok(())
        } else {
            Err(SrdpError::UnknownName {
                what: "layer",
                name: layer.to_string(),
                catalog: catalog.to_string(),
                path: config.path.clone(),
                known: format!(
                    "(layers: {}); define a schema with layer = \"{layer}\" under \
                     [catalogs.{catalog}.schemas.<schema>]",
                    list(&layers)
                ),
            })
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
    let raw = layer == DLT_LAYER;
    // One warning per relaxed rule; the single_writer one names the schema when the write is
    // allowed only because that rule is relaxed.
    let mut warnings =
        relaxed_warnings_except(config, check.warning.is_some().then_some(SINGLE_WRITER));
    warnings.extend(check.warning);
    Ok(DltDestination {
        catalog: def.name.clone(),
        attach_name: def.name.clone(),
        catalog_url: Some(catalog_url(&def.backend)),
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
        destination_type: DUCKLAKE.to_string(),
        file_format: None,
        layout: None,
        promote_into: None,
    })
}

/// The tenant project of a load: the one asked for (which must exist), else the catalog's.
fn project_of(config: &Config, def: &CatalogDef, request: &DltRequest) -> Result<Option<String>> {
    let catalog = &def.name;
    match &request.project {
        Some(p) if !def.projects.contains_key(p) => {
            let known: Vec<String> = def.projects.keys().cloned().collect();
            Err(SrdpError::UnknownName {
                what: "project",
                name: p.clone(),
                catalog: catalog.clone(),
                path: config.path.clone(),
                known: format!(
                    "(projects: {}); set project = \"{p}\" or add \
                     [catalogs.{catalog}.projects.{p}]",
                    list(&known)
                ),
            })
        }
        Some(p) => Ok(Some(p.clone())),
        None => Ok(def.project.clone()),
    }
}

/// dlt's `filesystem` destination into the landing zone: the landing path as bucket URL, the
/// project's folder (or `landing`) as dataset, parquet files in [`LANDING_LAYOUT`], and the raw
/// dataset promotions go into. The raw rules do not apply in this quarantine.
fn landing_destination(
    config: &Config,
    def: &CatalogDef,
    request: &DltRequest,
    writer: String,
    project: Option<String>,
) -> Result<DltDestination> {
    let catalog = &def.name;
    let Some(landing) = &def.landing_path else {
        return Err(SrdpError::InvalidArgument(format!(
            "catalog '{catalog}' has no landing zone in {}; set landing_path = \"landing/\" under \
             [catalogs.{catalog}] (a local folder or s3:// prefix outside the data path)",
            config.path.display()
        )));
    };
    if let Some(schema) = &request.schema_name {
        return Err(SrdpError::InvalidArgument(format!(
            "the landing zone of catalog '{catalog}' is a folder outside DuckLake, not a schema; \
             leave out schema_name := '{schema}' with layer := 'landing'"
        )));
    }
    let check = check_landing_writer(config, catalog, &writer)?;
    let promote = def.promote_into.clone().unwrap_or_default();
    // A tenant's promotions go into its dataset named after the promote_into schema, which
    // `ownership` gives to that schema's writers alone, never dlt's raw dataset.
    let (dataset, promote_into) = match &project {
        Some(p) => (
            def.project_dataset(p, LANDING_LAYER),
            tenant_dataset(p, &promote),
        ),
        None => (LANDING_LAYER.to_string(), promote),
    };
    Ok(DltDestination {
        catalog: catalog.clone(),
        attach_name: catalog.clone(),
        catalog_url: None,
        metadata_schema: None,
        storage_url: storage_url(landing),
        dataset_name: dataset,
        layer: LANDING_LAYER.to_string(),
        writer,
        owner: Some(LANDING_OWNER.to_string()),
        write_disposition: None,
        schema_contract: None,
        data_inlining_row_limit: def.tunables.data_inlining_row_limit,
        warnings: check.warning.into_iter().collect(),
        destination_type: FILESYSTEM.to_string(),
        file_format: Some(LANDING_FILE_FORMAT.to_string()),
        layout: Some(LANDING_LAYOUT.to_string()),
        promote_into: Some(promote_into),
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
