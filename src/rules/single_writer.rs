//! The single_writer rule: a schema has exactly one writer, dlt owns only raw schemas in
//! DuckLake (and the landing zone, a folder outside it), and a writer writes only what it owns.
//!
//! [`schema_refusal`] is what validation of `srdp.toml` asks about each schema definition;
//! [`check_writer`] is what `srdp_check_writer` and every dlt load ask before writing. Both
//! refusals end with [`super::relax_line`], the one place that words how to relax a rule.

use super::{list, relax_line, SINGLE_WRITER};
use crate::config::{same_name, CatalogDef, Config, Rules, SchemaDef, DLT_LAYER, LANDING_LAYER};

/// The owner of every landing zone.
pub const LANDING_OWNER: &str = "dlt";
use crate::error::{Result, SrdpError};

/// The outcome of a writer check that allowed the write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriterCheck {
    /// The owners of the schema (`None` when the definition names none).
    pub owner: Option<String>,
    pub layer: Option<String>,
    /// Set when the write is allowed only because `single_writer` is relaxed.
    pub warning: Option<String>,
}

/// Writers and layer of `schema`: its own entry; else the one schema `s` whose tenant dataset
/// `<project>_<s>` it is (a dataset named after a schema, never renamed by a project); else the
/// layer's entry for a tenant dataset of that layer (`<project>_<layer>` or the project's
/// `<layer>_dataset`), whose writers are those of every schema of the layer. So a tenant's
/// `acme_raw` and `acme_raw_landed` belong to schemas `raw` and `raw_landed` alone. Names are
/// compared as DuckDB resolves them ([`same_name`]): `Raw` and `ACME_RAW` are `raw` and `acme_raw`.
pub fn ownership(def: &CatalogDef, schema: &str) -> Option<(Vec<String>, String)> {
    if let Some((_, s)) = def.schema(schema) {
        return Some((s.writers.clone(), s.layer.clone()));
    }
    for project in def.projects.keys() {
        for (name, s) in &def.schemas {
            if same_name(&tenant_dataset(project, name), schema) {
                return Some((s.writers.clone(), s.layer.clone()));
            }
        }
    }
    for project in def.projects.keys() {
        for layer in def.layers() {
            if same_name(&def.project_dataset(project, &layer), schema) {
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

/// The dataset of `project` named after schema `schema`: `<project>_<schema>`.
pub fn tenant_dataset(project: &str, schema: &str) -> String {
    format!("{project}_{schema}")
}

/// Every writer named in the catalog's schemas, and dlt when the catalog has a landing zone,
/// sorted.
fn writers(def: &CatalogDef) -> Vec<String> {
    let mut all: Vec<String> = def
        .schemas
        .values()
        .flat_map(|s| s.writers.iter().cloned())
        .collect();
    if def.landing_path.is_some() {
        all.push(LANDING_OWNER.to_string());
    }
    all.sort();
    all.dedup();
    all
}

/// What `writer` may write in `def`, for refusals: its schemas, their tenant datasets and the
/// tenant datasets of their layers that [`ownership`] gives to it, and for dlt the landing zone
/// when the catalog has one.
fn may_write(def: &CatalogDef, writer: &str) -> String {
    let mut candidates: Vec<String> = Vec::new();
    for (name, s) in def
        .schemas
        .iter()
        .filter(|(_, s)| s.writers.iter().any(|w| w == writer))
    {
        candidates.push(name.clone());
        for project in def.projects.keys() {
            candidates.push(tenant_dataset(project, name));
            candidates.push(def.project_dataset(project, &s.layer));
        }
    }
    let mut schemas: Vec<String> = candidates
        .into_iter()
        .filter(|c| ownership(def, c).is_some_and(|(owners, _)| owners.iter().any(|w| w == writer)))
        .collect();
    schemas.sort();
    schemas.dedup();
    match (&def.landing_path, writer == LANDING_OWNER) {
        (Some(_), true) if schemas.is_empty() => "the landing zone (landing_path)".to_string(),
        (Some(_), true) => format!("{} and the landing zone (landing_path)", list(&schemas)),
        _ => list(&schemas),
    }
}

/// Why the single_writer rule refuses the definition of `schema`, or `None` when it does not
/// (always `None` while the rule is relaxed): a schema names exactly one writer, and dlt owns only
/// raw schemas. Validation reports the refusal at the schema's `writer` key.
pub fn schema_refusal(rules: &Rules, schema: &str, def: &SchemaDef) -> Option<String> {
    if !rules.single_writer.enabled {
        return None;
    }
    let relax = format!("or relax the rule with {}", relax_line(SINGLE_WRITER));
    let (writers, layer) = (&def.writers, &def.layer);
    if writers.len() > 1 {
        return Some(format!(
            "names {} writers ({}); with the single_writer rule on, a schema has exactly one \
             writer. Keep one, {relax}",
            writers.len(),
            writers.join(", ")
        ));
    }
    if writers.iter().any(|w| w == "dlt") && layer != DLT_LAYER {
        return Some(format!(
            "dlt may only own raw schemas while the single_writer rule is on, and schema \
             '{schema}' has layer '{layer}'. Give it another writer, load with dlt into a raw \
             schema or the landing zone (landing_path), {relax}"
        ));
    }
    None
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
    let refused = |why: String| SrdpError::WriterRefused {
        writer: writer.to_string(),
        schema: schema.to_string(),
        catalog: catalog.to_string(),
        why: format!("{why}. '{writer}' may write: {}", may_write(def, writer)),
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

/// May `writer` write the landing zone of `catalog` (its owner is dlt)? The caller has checked
/// that the catalog has one. An error says who owns it and how to relax the rule.
pub fn check_landing_writer(config: &Config, catalog: &str, writer: &str) -> Result<WriterCheck> {
    let def = config.catalog(catalog)?;
    let landing = def.landing_path.clone().unwrap_or_default();
    let owned = |warning| WriterCheck {
        owner: Some(LANDING_OWNER.to_string()),
        layer: Some(LANDING_LAYER.to_string()),
        warning,
    };
    if writer == LANDING_OWNER {
        return Ok(owned(None));
    }
    let known = writers(def);
    if !known.iter().any(|w| w == writer) {
        return Err(SrdpError::UnknownName {
            what: "writer",
            name: writer.to_string(),
            catalog: catalog.to_string(),
            path: config.path.clone(),
            known: format!(
                "(writers: {}); the landing zone is written by '{LANDING_OWNER}'",
                list(&known)
            ),
        });
    }
    if config.rules.single_writer.enabled {
        return Err(SrdpError::LandingRefused {
            writer: writer.to_string(),
            catalog: catalog.to_string(),
            landing,
            why: format!(
                "it is owned by '{LANDING_OWNER}' (single_writer). '{writer}' may write: {}",
                may_write(def, writer)
            ),
            path: config.path.clone(),
        });
    }
    let source = config
        .rules
        .single_writer
        .line
        .map(|l| format!("{}:{l}", config.path.display()))
        .unwrap_or_default();
    Ok(owned(Some(format!(
        "srdp rule single_writer is relaxed by {source}: writer '{writer}' writes the landing \
         zone of catalog '{catalog}' ({landing}) owned by '{LANDING_OWNER}'"
    ))))
}
