//! The single_writer rule: a schema has exactly one writer, dlt owns only raw schemas in
//! DuckLake (and the landing zone, a folder outside it), and a writer writes only what it owns.
//!
//! [`schema_refusal`] is what validation of `srdp.toml` asks about each schema definition;
//! [`check_writer`] is what `srdp_check_writer` and every dlt load ask before writing. Both
//! refusals end with [`super::relax_line`], the one place that words how to relax a rule.

use super::{list, relax_line, SINGLE_WRITER};
use crate::config::{
    cut, folded, same_name, CatalogDef, Config, PrefixIndex, Rules, SchemaDef, SchemaPattern,
    DLT_LAYER, IDENTIFIER_BYTES, LANDING_LAYER,
};

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

/// Who owns a schema, and which entry of `srdp.toml` says so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub writers: Vec<String>,
    pub layer: String,
    /// The entry that gives the schema to its writers, as `srdp_write_audit` shows it:
    /// `schema 'curated'`, `schema 'raw' of project 'acme'`, `layer 'raw' of project 'acme'`,
    /// `pattern 'dbt_*'`.
    pub rule: String,
}

/// The owner of `schema`: its own entry; else the one schema `s` whose tenant dataset
/// `<project>_<s>` it is (a dataset named after a schema, never renamed by a project); else the
/// layer's entry for a tenant dataset of that layer (`<project>_<layer>` or the project's
/// `<layer>_dataset`), whose writers are those of every schema of the layer; else the most
/// specific pattern that matches it (`"dbt_*"`). So a tenant's `acme_raw` and
/// `acme_raw_landed` belong to schemas `raw` and `raw_landed` alone, and an exact entry wins over
/// every pattern. Names are compared as DuckDB resolves them ([`same_name`]): `Raw` and
/// `ACME_RAW` are `raw` and `acme_raw`.
pub fn owner(def: &CatalogDef, schema: &str) -> Option<Owner> {
    if let Some((name, s)) = def.schema(schema) {
        return Some(Owner {
            writers: s.writers.clone(),
            layer: s.layer.clone(),
            rule: format!("schema '{name}'"),
        });
    }
    for project in def.projects.keys() {
        for (name, s) in &def.schemas {
            if same_name(&tenant_dataset(project, name), schema) {
                return Some(Owner {
                    writers: s.writers.clone(),
                    layer: s.layer.clone(),
                    rule: format!("schema '{name}' of project '{project}'"),
                });
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
                return Some(Owner {
                    writers,
                    rule: format!("layer '{layer}' of project '{project}'"),
                    layer,
                });
            }
        }
    }
    def.pattern(schema).map(|p| Owner {
        writers: p.def.writers.clone(),
        layer: p.def.layer.clone(),
        rule: format!("pattern '{}'", p.pattern),
    })
}

/// Writers and layer of `schema`, as [`owner`] decides them.
pub fn ownership(def: &CatalogDef, schema: &str) -> Option<(Vec<String>, String)> {
    owner(def, schema).map(|o| (o.writers, o.layer))
}

/// The dataset of `project` named after schema `schema`: `<project>_<schema>`.
pub fn tenant_dataset(project: &str, schema: &str) -> String {
    format!("{project}_{schema}")
}

/// Every writer named in the catalog's schemas and patterns, and dlt when the catalog has a landing zone,
/// sorted.
fn writers(def: &CatalogDef) -> Vec<String> {
    let mut all: Vec<String> = def
        .schemas
        .values()
        .chain(def.patterns.iter().map(|p| &p.def))
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
/// tenant datasets of their layers that [`ownership`] gives to it, then its patterns, and for
/// dlt the landing zone when the catalog has one.
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
    let mut patterns: Vec<String> = def
        .patterns
        .iter()
        .filter(|p| p.def.writers.iter().any(|w| w == writer))
        .map(|p| p.pattern.clone())
        .collect();
    patterns.sort();
    schemas.extend(patterns);
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

/// The single_writer rule over a catalog's patterns, in file order: a pattern must not match a
/// schema of another writer, whether an exact entry (which would win, so the pattern's writer
/// could not have meant it) or a tenant dataset ([`ownership`]), nor overlap a pattern of another
/// writer above it in the file.
///
/// Built once per read of the file, with the names each pattern could clash with indexed by
/// prefix ([`PrefixIndex`]), so a file of `n` patterns costs `O(n log n)`, not `n²`. With the rule
/// on every entry has exactly one writer ([`schema_refusal`]), so "another writer" is a writer
/// other than the pattern's.
pub struct PatternClashes<'a> {
    def: &'a CatalogDef,
    /// The patterns in file order.
    in_file: &'a [&'a SchemaPattern],
    /// The schemas in name order (the rank of [`Self::schemas`]) and their folded names.
    schema_names: Vec<&'a String>,
    schemas: PrefixIndex,
    /// Every owned tenant dataset, as (project, dataset, owners), in the order the plain check
    /// visits them: projects by name, each project's schema datasets by schema name, then its
    /// layer datasets.
    datasets: Vec<(&'a str, String, Vec<String>)>,
    dataset_names: PrefixIndex,
    /// The patterns' prefixes, folded and cut, ranked in file order.
    patterns: PrefixIndex,
}

/// An entry's writers as one key: with the rule on, its one writer.
fn writer_key(writers: &[String]) -> String {
    writers.join(", ")
}

/// A pattern's prefix as patterns are compared with each other: folded and cut to
/// [`crate::config::IDENTIFIER_BYTES`].
fn overlap_key(prefix: &str) -> String {
    cut(&folded(prefix)).to_string()
}

impl<'a> PatternClashes<'a> {
    /// The index of `def`'s schemas, tenant datasets and `in_file` patterns.
    pub fn new(def: &'a CatalogDef, in_file: &'a [&'a SchemaPattern]) -> Self {
        let schema_names: Vec<&String> = def.schemas.keys().collect();
        let schemas = PrefixIndex::new(
            def.schemas
                .iter()
                .map(|(name, s)| (folded(name), writer_key(&s.writers))),
        );
        let layers = def.layers();
        let mut datasets = Vec::new();
        for project in def.projects.keys() {
            let names = def
                .schemas
                .keys()
                .map(|name| tenant_dataset(project, name))
                .chain(layers.iter().map(|l| def.project_dataset(project, l)));
            for dataset in names {
                if let Some((owners, _)) = ownership(def, &dataset) {
                    datasets.push((project.as_str(), dataset, owners));
                }
            }
        }
        let dataset_names = PrefixIndex::new(
            datasets
                .iter()
                .map(|(_, d, owners)| (folded(d), writer_key(owners))),
        );
        let patterns = PrefixIndex::new(
            in_file
                .iter()
                .map(|p| (overlap_key(&p.prefix), writer_key(&p.def.writers))),
        );
        PatternClashes {
            def,
            in_file,
            schema_names,
            schemas,
            datasets,
            dataset_names,
            patterns,
        }
    }

    /// Why the rule refuses the `i`th pattern in file order, or `None` when it does not (always
    /// `None` while the rule is relaxed). `line` gives the line of an entry by its key, for the
    /// message.
    pub fn refusal(&self, rules: &Rules, i: usize, line: &dyn Fn(&str) -> usize) -> Option<String> {
        if !rules.single_writer.enabled {
            return None;
        }
        let pattern = self.in_file[i];
        let writer = writer_key(&pattern.def.writers);
        let this = format!(
            "pattern \"{}\" of writer '{}'",
            pattern.pattern,
            pattern.def.writers.join(", ")
        );
        let advice = format!(
            "with the single_writer rule on, a schema has exactly one writer. Narrow the pattern, \
             rename the schema, or relax the rule with {}",
            relax_line(SINGLE_WRITER)
        );
        if let Some(rank) = matched(&self.schemas, &pattern.prefix, &writer) {
            let name = self.schema_names[rank];
            return Some(format!(
                "{this} matches schema \"{name}\" (line {}) of writer '{}'; {advice}",
                line(name),
                self.def.schemas[name].writers.join(", ")
            ));
        }
        if let Some(rank) = matched(&self.dataset_names, &pattern.prefix, &writer) {
            let (project, dataset, owners) = &self.datasets[rank];
            return Some(format!(
                "{this} matches dataset \"{dataset}\" of project '{project}', owned by \
                 '{}'; {advice}",
                owners.join(", ")
            ));
        }
        // Two patterns overlap when one key starts with the other: the keys starting with this
        // one, and this one's own prefixes (at character boundaries).
        let key = overlap_key(&pattern.prefix);
        let longer = self.patterns.first_starting_with(&key, &writer);
        let shorter = key
            .char_indices()
            .skip(1)
            .filter_map(|(end, _)| self.patterns.first_equal_to(&key[..end], &writer))
            .min();
        let earlier = longer.into_iter().chain(shorter).filter(|j| *j < i).min();
        earlier.map(|j| {
            let other = self.in_file[j];
            format!(
                "{this} overlaps pattern \"{}\" (line {}) of writer '{}': a schema such as \
                 \"{}\" matches both; {advice}",
                other.pattern,
                line(&other.pattern),
                other.def.writers.join(", "),
                crate::config::shared_name(&pattern.prefix, &other.prefix)
            )
        })
    }
}

/// The lowest rank among the names of `index` that a pattern with `prefix` matches
/// ([`SchemaPattern::matches`]: they start with the folded prefix, or equal its cut when the
/// prefix is longer than the cut) whose writer is not `writer`.
fn matched(index: &PrefixIndex, prefix: &str, writer: &str) -> Option<usize> {
    let prefix = folded(prefix);
    let starting = index.first_starting_with(&prefix, writer);
    let cut_name = (prefix.len() > IDENTIFIER_BYTES)
        .then(|| index.first_equal_to(cut(&prefix), writer))
        .flatten();
    starting.into_iter().chain(cut_name).min()
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
