//! From the raw layer to the model: every value checked, defaults applied, paths resolved.
//!
//! An invalid value is an error naming the file, the line and the key; nothing falls back to a
//! default silently. Catalog names first: no two may differ only by case (DuckDB would attach
//! both under one name). Then a catalog is validated part by part, and the first error wins in
//! this order: backend (`metadata`), metadata schema, data path, schemas (no two differing only
//! by case), landing zone, projects, secrets, tunables; then, across catalogs, landing zones
//! apart from every data path. The
//! single_writer rule's verdict on a schema definition comes from [`crate::rules`].

use super::landing;
use super::locations::{canonical, is_known_kind};
use super::model::{
    project_dataset, Backend, CatalogDef, Config, ProjectDef, Rule, Rules, SchemaDef, Tunables,
    DEFAULT_FILE_METADATA_SCHEMA, DEFAULT_POSTGRES_METADATA_SCHEMA, DLT_LAYER, LANDING_LAYER,
    PROJECT_DATASET_LAYERS,
};
use super::names::folded;
use super::paths::{is_url, non_empty, resolve, with_trailing_slash};
use super::patterns::{SchemaPattern, WILDCARD};
use super::raw;
use super::span::{invalid, line_of, syntax_error};
use super::vocabulary::{closest, known, BUILTIN_LAYERS, BUILTIN_WRITERS};
use crate::error::{Result, SrdpError};
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;
use toml::Spanned;

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
    let source = Source { path, text };
    let rules = rules(text, &file.rules);
    let defaults = tunables(&source, &Tunables::default(), &file.defaults, "defaults")?;
    let headers: Vec<(&String, Range<usize>)> =
        file.catalogs.iter().map(|(n, c)| (n, c.span())).collect();
    if let Some(clash) = case_clash(&source, &headers) {
        return Err(source.invalid(
            clash.span,
            format!("catalogs.{}", clash.name),
            format!(
                "catalog \"{name}\" differs only by case from catalog \"{other}\" (line {line}); \
                 DuckDB attaches both under one database name. Keep one of [catalogs.{name}] and \
                 [catalogs.{other}], or rename one",
                name = clash.name,
                other = clash.other,
                line = clash.other_line
            ),
        ));
    }
    let names = vocabulary(&source, &file.custom)?;
    let mut catalogs = BTreeMap::new();
    for (name, spanned) in &file.catalogs {
        if name.trim().is_empty() {
            return Err(source.invalid(
                spanned.span(),
                "catalogs".into(),
                "a catalog name must not be empty",
            ));
        }
        let scope = CatalogScope {
            file: &source,
            name,
            defaults: &defaults,
            rules: &rules,
            names: &names,
        };
        catalogs.insert(name.clone(), catalog(&scope, spanned.get_ref())?);
    }
    landing::apart_from_data_paths(&source, &file, &catalogs)?;
    Ok(Config {
        path: path.to_path_buf(),
        catalogs,
        rules,
    })
}

/// The file being validated: its path, for messages and relative paths, and its text, for lines.
pub(super) struct Source<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Source<'_> {
    /// An error at `span` naming the dotted `key`.
    pub(super) fn invalid(
        &self,
        span: Range<usize>,
        key: String,
        message: impl Into<String>,
    ) -> SrdpError {
        invalid(self.path, self.text, span.start, Some(key), message.into())
    }

    /// The directory relative paths in the file resolve against.
    fn base(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("/"))
    }
}

/// One catalog being validated: the file it is in, its name, and what it inherits.
pub(super) struct CatalogScope<'a> {
    file: &'a Source<'a>,
    pub(super) name: &'a str,
    defaults: &'a Tunables,
    pub(super) rules: &'a Rules,
    names: &'a Vocabulary,
}

/// The writers and layers a schema entry may name: the built-in ones and `[custom]`'s.
struct Vocabulary {
    writers: Vec<String>,
    layers: Vec<String>,
}

/// `[custom]`: each declared name non-empty, and no layer `landing`.
fn vocabulary(file: &Source, raw: &raw::Custom) -> Result<Vocabulary> {
    for (key, names) in [("writers", &raw.writers), ("layers", &raw.layers)] {
        for n in names {
            if n.get_ref().trim().is_empty() {
                return Err(file.invalid(
                    n.span(),
                    format!("custom.{key}"),
                    "a name must not be empty",
                ));
            }
            if key == "layers" && n.get_ref() == LANDING_LAYER {
                return Err(file.invalid(
                    n.span(),
                    "custom.layers".into(),
                    "the landing zone is a folder outside DuckLake (landing_path), not a layer of \
                     schemas; remove \"landing\"",
                ));
            }
        }
    }
    let names = |v: &[Spanned<String>]| v.iter().map(|n| n.get_ref().clone()).collect::<Vec<_>>();
    Ok(Vocabulary {
        writers: known(&BUILTIN_WRITERS, &names(&raw.writers)),
        layers: known(&BUILTIN_LAYERS, &names(&raw.layers)),
    })
}

/// Why `name` is not one of `known` (a `kind`: writer or layer): the known names, the closest
/// one when `name` looks like a typo of it, and how to declare a name of one's own.
fn unknown_name(kind: &str, name: &str, known: &[String]) -> String {
    let hint = closest(name, known)
        .map(|k| format!(" (did you mean \"{k}\"?)"))
        .unwrap_or_default();
    format!(
        "unknown {kind} \"{name}\"{hint}; known {kind}s: {}. A {kind} of your own is declared \
         under [custom] as {kind}s = [\"{name}\"]",
        known.join(", ")
    )
}

impl CatalogScope<'_> {
    /// An error at `span` naming `catalogs.<name>.<key>`.
    pub(super) fn err(
        &self,
        span: Range<usize>,
        key: &str,
        message: impl Into<String>,
    ) -> SrdpError {
        self.file
            .invalid(span, format!("catalogs.{}.{key}", self.name), message)
    }
}

/// One catalog, validated part by part.
fn catalog(cx: &CatalogScope, raw: &raw::Catalog) -> Result<CatalogDef> {
    let backend = backend(cx, &raw.metadata)?;
    let metadata_schema = metadata_schema(cx, raw.metadata_schema.as_ref(), &backend)?;
    let data_path = folder(cx, &raw.data_path, "data_path")?;
    let (schemas, patterns) = schemas(cx, &raw.schemas)?;
    let (landing_path, promote_into) = landing::landing(cx, raw, &data_path, &schemas)?;
    let project = optional(cx, &raw.project, "project")?;
    let projects = projects(cx, project.as_deref(), &raw.projects)?;
    let def = CatalogDef {
        name: cx.name.to_string(),
        backend,
        metadata_schema,
        data_path,
        landing_path,
        promote_into,
        project,
        writer_secret: optional(cx, &raw.writer_secret, "writer_secret")?,
        reader_secret: optional(cx, &raw.reader_secret, "reader_secret")?,
        tunables: tunables(
            cx.file,
            cx.defaults,
            &raw.tunables(),
            &format!("catalogs.{}", cx.name),
        )?,
        schemas,
        patterns,
        projects,
    };
    pattern_clashes(cx, &raw.schemas, &def)?;
    Ok(def)
}

/// `metadata`: a DuckDB file (optionally `duckdb:<path>`), `sqlite:<path>`, or
/// `postgres:<libpq key=value>` without any form of password.
fn backend(cx: &CatalogScope, metadata: &Spanned<String>) -> Result<Backend> {
    let err = |message: String| cx.err(metadata.span(), "metadata", message);
    let text = metadata.get_ref().trim();
    if text.is_empty() {
        return Err(err(
            "must not be empty; give a DuckDB file path, \"sqlite:<path>\" or \
                        \"postgres:<libpq key=value>\""
                .into(),
        ));
    }
    if let Some(rest) = text.strip_prefix("sqlite:") {
        let file =
            non_empty(rest).ok_or_else(|| err("\"sqlite:\" needs a file path after it".into()))?;
        return Ok(Backend::Sqlite {
            path: resolve(cx.file.base(), file),
        });
    }
    if let Some(rest) = text.strip_prefix("postgres:") {
        let conninfo = non_empty(rest).ok_or_else(|| {
            err(
                "\"postgres:\" needs libpq key=value pairs after it, such as \
                 \"dbname=lake host=127.0.0.1\""
                    .into(),
            )
        })?;
        let parsed = crate::libpq::parse(conninfo).map_err(|e| {
            err(format!(
                "is not a libpq connection string after \"postgres:\": {e}"
            ))
        })?;
        if !parsed.secret_keys().is_empty() {
            return Err(err(
                "contains a password; secrets never live in srdp.toml: put the \
                            credentials in a DuckDB secret and name it in writer_secret / \
                            reader_secret"
                    .into(),
            ));
        }
        return Ok(Backend::Postgres {
            conninfo: conninfo.to_string(),
        });
    }
    let file = text.strip_prefix("duckdb:").unwrap_or(text);
    Ok(Backend::DuckDbFile {
        path: resolve(cx.file.base(), file),
    })
}

/// `metadata_schema`: the backend's default when absent; SQLite has only `main`.
fn metadata_schema(
    cx: &CatalogScope,
    raw: Option<&Spanned<String>>,
    backend: &Backend,
) -> Result<String> {
    match (raw, backend) {
        (Some(s), _) if s.get_ref().trim().is_empty() => {
            Err(cx.err(s.span(), "metadata_schema", "must not be empty"))
        }
        (Some(s), Backend::Sqlite { .. }) if s.get_ref() != DEFAULT_FILE_METADATA_SCHEMA => Err(cx
            .err(
                s.span(),
                "metadata_schema",
                format!(
                    "SQLite catalogs only have the schema \"main\", got \"{}\"; remove the key \
                     or set it to \"main\"",
                    s.get_ref()
                ),
            )),
        (Some(s), _) => Ok(s.get_ref().clone()),
        (None, Backend::Postgres { .. }) => Ok(DEFAULT_POSTGRES_METADATA_SCHEMA.to_string()),
        (None, _) => Ok(DEFAULT_FILE_METADATA_SCHEMA.to_string()),
    }
}

/// `data_path` or `landing_path` (`key`): an object-store URL as written, or an absolute local
/// path resolved against the file's folder; both end in `/`.
pub(super) fn folder(cx: &CatalogScope, raw: &Spanned<String>, key: &str) -> Result<String> {
    let path = raw.get_ref().trim();
    if path.is_empty() {
        return Err(cx.err(
            raw.span(),
            key,
            "must not be empty; give a local folder or s3://bucket/prefix/",
        ));
    }
    if is_known_kind(path) {
        if let Err(e) = canonical(path) {
            return Err(cx.err(raw.span(), key, e));
        }
    }
    Ok(if is_url(path) {
        with_trailing_slash(path.to_string())
    } else {
        with_trailing_slash(resolve(cx.file.base(), path).display().to_string())
    })
}

/// An optional text key: absent is `None`, present must not be blank.
fn optional(cx: &CatalogScope, v: &Option<Spanned<String>>, key: &str) -> Result<Option<String>> {
    match v {
        Some(s) if s.get_ref().trim().is_empty() => {
            Err(cx.err(s.span(), key, "must not be empty; remove the key instead"))
        }
        Some(s) => Ok(Some(s.get_ref().clone())),
        None => Ok(None),
    }
}

/// `[catalogs.<c>.schemas.<s>]`, each with its writers and layer: the exact entries by name,
/// and the patterns (`"dbt_*"`) longest prefix first.
fn schemas(
    cx: &CatalogScope,
    raw: &BTreeMap<String, Spanned<raw::Schema>>,
) -> Result<(BTreeMap<String, SchemaDef>, Vec<SchemaPattern>)> {
    let headers: Vec<(&String, Range<usize>)> = raw.iter().map(|(n, s)| (n, s.span())).collect();
    if let Some(clash) = case_clash(cx.file, &headers) {
        return Err(cx.err(
            clash.span,
            &schema_key(clash.name),
            format!(
                "schema \"{name}\" of catalog '{c}' differs only by case from schema \"{other}\" \
                 (line {line}); DuckDB resolves both names to one schema, so their writers would \
                 write the same tables. Keep one of [catalogs.{c}.schemas.{name}] and \
                 [catalogs.{c}.schemas.{other}], or rename one",
                name = clash.name,
                other = clash.other,
                c = cx.name,
                line = clash.other_line
            ),
        ));
    }
    let mut schemas = BTreeMap::new();
    let mut patterns = Vec::new();
    for (name, s) in raw {
        if name.trim().is_empty() {
            return Err(cx.err(
                s.span(),
                &schema_key(name),
                format!(
                    "a schema name must not be empty; name the schema, as in \
                     [catalogs.{c}.schemas.raw]",
                    c = cx.name
                ),
            ));
        }
        if name.contains(WILDCARD) {
            patterns.push(pattern(cx, name, s)?);
        } else {
            schemas.insert(name.clone(), schema(cx, name, s.get_ref())?);
        }
    }
    patterns.sort_by(|a: &SchemaPattern, b: &SchemaPattern| {
        (b.prefix.len(), &a.prefix).cmp(&(a.prefix.len(), &b.prefix))
    });
    Ok((schemas, patterns))
}

/// `schemas.<name>` as the file writes it: a pattern's or a blank name quoted (`schemas."dbt_*"`).
fn schema_key(name: &str) -> String {
    if name.contains(WILDCARD) || name.trim().is_empty() {
        format!("schemas.\"{name}\"")
    } else {
        format!("schemas.{name}")
    }
}

/// One pattern entry: a prefix and one trailing `*`, a writer other than dlt (dlt's datasets are
/// named one by one, and so are its raw rules), a layer other than raw (raw schemas are looked up
/// by name: dlt's datasets, `promote_into`), and what [`schema`] asks of every entry.
fn pattern(cx: &CatalogScope, name: &str, raw: &Spanned<raw::Schema>) -> Result<SchemaPattern> {
    let key = schema_key(name);
    let prefix = name.strip_suffix(WILDCARD).unwrap_or(name);
    if prefix.contains(WILDCARD) || !name.ends_with(WILDCARD) {
        return Err(cx.err(
            raw.span(),
            &key,
            format!(
                "\"{name}\": only a * at the end of a schema name is a wildcard (a prefix \
                 pattern such as \"dbt_*\", which gives the writer every schema starting with \
                 dbt_); write one prefix and one trailing *"
            ),
        ));
    }
    if prefix.trim().is_empty() {
        return Err(cx.err(
            raw.span(),
            &key,
            "\"*\" alone would give every schema to one writer; write a prefix before the *, \
             such as \"dbt_*\"",
        ));
    }
    let s = raw.get_ref();
    let def = schema(cx, name, s)?;
    if def.writers.iter().any(|w| w == "dlt") {
        return Err(cx.err(
            s.writer.span(),
            &format!("{key}.writer"),
            format!(
                "dlt owns schemas by exact name only: each load's dataset and its raw rules \
                 are looked up by name. Name each schema dlt loads under \
                 [catalogs.{c}.schemas.<schema>], or give the pattern another writer",
                c = cx.name
            ),
        ));
    }
    if def.layer == DLT_LAYER {
        return Err(cx.err(
            s.layer.span(),
            &format!("{key}.layer"),
            format!(
                "a pattern may not have layer '{DLT_LAYER}': raw schemas are named one by one \
                 (dlt's datasets and promote_into are looked up by name). Name each raw schema \
                 under [catalogs.{c}.schemas.<schema>], or give the pattern another layer",
                c = cx.name
            ),
        ));
    }
    Ok(SchemaPattern {
        pattern: name.to_string(),
        prefix: prefix.to_string(),
        def,
    })
}

/// Each pattern, in file order, against the single_writer rule ([`crate::rules::PatternClashes`]):
/// no schema, tenant dataset or earlier pattern of another writer may match it.
fn pattern_clashes(
    cx: &CatalogScope,
    raw: &BTreeMap<String, Spanned<raw::Schema>>,
    def: &CatalogDef,
) -> Result<()> {
    if !cx.rules.single_writer.enabled {
        return Ok(());
    }
    let line = |name: &str| {
        raw.get(name)
            .map_or(0, |s| line_of(cx.file.text, s.span().start))
    };
    let mut in_file: Vec<&SchemaPattern> = def.patterns.iter().collect();
    in_file.sort_by_key(|p| raw.get(&p.pattern).map_or(0, |s| s.span().start));
    let clashes = crate::rules::PatternClashes::new(def, &in_file);
    for (i, p) in in_file.iter().enumerate() {
        if let Some(refusal) = clashes.refusal(cx.rules, i, &line) {
            let span = raw.get(&p.pattern).map_or(0..0, |s| s.span());
            return Err(cx.err(span, &schema_key(&p.pattern), refusal));
        }
    }
    Ok(())
}

/// Two table names of the file that DuckDB resolves to one object: `name` is the later one
/// in the file (at `span`), `other` the earlier one (on `other_line`).
struct CaseClash<'a> {
    name: &'a str,
    span: Range<usize>,
    other: &'a str,
    other_line: usize,
}

/// The first pair of `tables` (name, span) whose names differ only by case, if any.
fn case_clash<'a>(file: &Source, tables: &[(&'a String, Range<usize>)]) -> Option<CaseClash<'a>> {
    let mut in_file: Vec<&(&String, Range<usize>)> = tables.iter().collect();
    in_file.sort_by_key(|(_, span)| span.start);
    let mut seen: BTreeMap<String, &(&String, Range<usize>)> = BTreeMap::new();
    for entry in in_file {
        let (name, span) = entry;
        if let Some((other, other_span)) = seen.get(&folded(name)).copied() {
            return Some(CaseClash {
                name,
                span: span.clone(),
                other,
                other_line: line_of(file.text, other_span.start),
            });
        }
        seen.insert(folded(name), entry);
    }
    None
}

/// One schema: at least one named writer and a layer, and nothing the single_writer rule refuses.
fn schema(cx: &CatalogScope, name: &str, raw: &raw::Schema) -> Result<SchemaDef> {
    let writer_key = format!("{}.writer", schema_key(name));
    let writers: Vec<String> = match raw.writer.get_ref() {
        raw::Writers::One(w) => vec![w.clone()],
        raw::Writers::Many(ws) => ws.clone(),
    };
    if writers.is_empty() || writers.iter().any(|w| w.trim().is_empty()) {
        return Err(cx.err(
            raw.writer.span(),
            &writer_key,
            "must name a writer (such as \"dlt\", \"dbt\" or \"io_manager\")",
        ));
    }
    let layer_key = format!("{}.layer", schema_key(name));
    if raw.layer.get_ref().trim().is_empty() {
        return Err(cx.err(raw.layer.span(), &layer_key, "must not be empty"));
    }
    if raw.layer.get_ref() == LANDING_LAYER {
        return Err(cx.err(
            raw.layer.span(),
            &layer_key,
            format!(
                "the landing zone is a folder outside DuckLake, not a schema; remove \
                 [catalogs.{c}.schemas.{name}] and set landing_path on [catalogs.{c}] (a local \
                 folder or s3:// prefix outside the data path)",
                c = cx.name
            ),
        ));
    }
    if let Some(w) = writers.iter().find(|w| !cx.names.writers.contains(w)) {
        return Err(cx.err(
            raw.writer.span(),
            &writer_key,
            unknown_name("writer", w, &cx.names.writers),
        ));
    }
    if !cx.names.layers.contains(raw.layer.get_ref()) {
        return Err(cx.err(
            raw.layer.span(),
            &layer_key,
            unknown_name("layer", raw.layer.get_ref(), &cx.names.layers),
        ));
    }
    let def = SchemaDef {
        writers,
        layer: raw.layer.get_ref().clone(),
    };
    if let Some(refusal) = crate::rules::schema_refusal(cx.rules, name, &def) {
        return Err(cx.err(raw.writer.span(), &writer_key, refusal));
    }
    Ok(def)
}

/// The tenant projects: `project` (if set) and every `[catalogs.<c>.projects.<p>]`, no two of
/// which load into the same raw dataset or the same landing folder.
fn projects(
    cx: &CatalogScope,
    project: Option<&str>,
    raw: &BTreeMap<String, Spanned<raw::Project>>,
) -> Result<BTreeMap<String, ProjectDef>> {
    let mut projects = BTreeMap::new();
    if let Some(p) = project {
        projects.insert(p.to_string(), ProjectDef::default());
    }
    for (p, def) in raw {
        projects.insert(p.clone(), project_def(cx, p, def.get_ref())?);
    }
    for layer in PROJECT_DATASET_LAYERS {
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        for p in projects.keys() {
            let dataset = project_dataset(&projects, p, layer);
            if let Some(other) = seen.insert(dataset.clone(), p.clone()) {
                return Err(cx.err(
                    raw.get(p).map_or(0..0, |d| d.span()),
                    &format!("projects.{p}"),
                    format!(
                        "projects '{other}' and '{p}' would both load into dataset '{dataset}'; \
                         give one of them another {layer}_dataset"
                    ),
                ));
            }
        }
    }
    Ok(projects)
}

/// One project's dataset-name overrides; a present override must not be blank.
fn project_def(cx: &CatalogScope, name: &str, raw: &raw::Project) -> Result<ProjectDef> {
    let mut datasets = BTreeMap::new();
    for (layer, v) in [("raw", &raw.raw_dataset), ("landing", &raw.landing_dataset)] {
        if let Some(v) = v {
            if v.get_ref().trim().is_empty() {
                return Err(cx.err(
                    v.span(),
                    &format!("projects.{name}.{layer}_dataset"),
                    "must not be empty; remove the key to use the default",
                ));
            }
            datasets.insert(layer.to_string(), v.get_ref().clone());
        }
    }
    Ok(ProjectDef { datasets })
}

/// `raw` over `base`, each value within its range (the table is `defaults` or `catalogs.<c>`).
fn tunables(file: &Source, base: &Tunables, raw: &raw::Tunables, table: &str) -> Result<Tunables> {
    let check = |v: &Option<Spanned<i64>>, k: &str, min: i64, max: i64| -> Result<Option<i64>> {
        match v {
            None => Ok(None),
            Some(s) if (min..=max).contains(s.get_ref()) => Ok(Some(*s.get_ref())),
            Some(s) => Err(file.invalid(
                s.span(),
                format!("{table}.{k}"),
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

/// `[rules]`: each rule on unless a line says otherwise, with that line remembered.
fn rules(text: &str, raw: &raw::Rules) -> Rules {
    let rule = |v: &Option<Spanned<bool>>| match v {
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
