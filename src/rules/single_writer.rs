//! The single_writer rule: a schema has exactly one writer, dlt owns only landing or raw
//! schemas, and a writer writes only the schemas it owns.
//!
//! [`schema_refusal`] is what validation of `srdp.toml` asks about each schema definition;
//! [`check_writer`] is what `srdp_check_writer` and every dlt load ask before writing. Both
//! refusals end with [`super::relax_line`], the one place that words how to relax a rule.

use super::{list, relax_line, SINGLE_WRITER};
use crate::config::{CatalogDef, Config, Rules, SchemaDef, DLT_LAYERS};
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

/// Writers and layer of `schema`: its own entry, or the layer's entry for a tenant dataset.
pub fn ownership(def: &CatalogDef, schema: &str) -> Option<(Vec<String>, String)> {
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

/// Why the single_writer rule refuses the definition of `schema`, or `None` when it does not
/// (always `None` while the rule is relaxed): a schema names exactly one writer, and dlt owns only
/// landing or raw schemas. Validation reports the refusal at the schema's `writer` key.
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
    if writers.iter().any(|w| w == "dlt") && !DLT_LAYERS.contains(&layer.as_str()) {
        return Some(format!(
            "dlt may only own landing or raw schemas while the single_writer rule is on, and \
             schema '{schema}' has layer '{layer}'. Give it another writer, load with dlt into a \
             landing or raw schema, {relax}"
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
