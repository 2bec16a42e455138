//! The write audit: who changed which table of a lake, read from DuckLake's own snapshots, and
//! whether `srdp.toml` lets that writer write there (pure: metadata rows in, audit rows out).
//!
//! Every DuckLake snapshot records its changes (`ducklake_snapshot_changes.changes_made`, such
//! as `created_table:"raw"."orders",inlined_insert:2`) and the commit author and message that
//! the writing transaction set with `set_commit_message`. srdp's writers set the author to their
//! writer name (`dlt`, `dbt`, `io_manager`) and srdp's own maintenance to [`MAINTENANCE_AUTHOR`].
//! [`audit`] maps each change to its schema and table (ids through the catalog's versioned
//! `ducklake_table`/`ducklake_view`/`ducklake_schema` rows), looks up the schema's owner with
//! [`crate::rules::owner`] (which also names the `srdp.toml` entry that gives it) and judges the write as `single_writer` would have: allowed when
//! the author owns the schema, or when the rule is relaxed (with a note naming the line).
//! Flushes, merges and rewrites keep a table's rows as they were, so they are allowed whoever
//! ran them. One change of srdp's maintenance looks like a data change: a flush that writes
//! inline deletion markers into a delete file records `deleted_from_table`, as a `DELETE` does.
//! Such a change is srdp's maintenance only when its author is [`MAINTENANCE_AUTHOR`] AND
//! DuckLake's own row changes of the table at that snapshot (`ducklake_table_changes`) are none
//! ([`RowCheck`]: [`row_checks`] lists them, the caller runs [`RowCheck::query`]); otherwise it
//! is judged as the deletion it is, so a data change merely labelled `srdp` is no loophole.
//! [`unnamed_schemas`] lists the live schemas that `srdp.toml` gives to nobody (DuckLake's own
//! `main` only once something was written to it: a fresh lake audits clean).

use crate::config::{CatalogDef, Config};
use crate::error::{Result, SrdpError};
use crate::rules::owner;
use crate::sql::{metadata_catalog, Ident, Literal};
use std::collections::{BTreeMap, BTreeSet};

/// The commit author of srdp's own maintenance (flushes, merges, rewrites).
pub const MAINTENANCE_AUTHOR: &str = "srdp";

/// DuckLake's change kind of a delete file written at a snapshot: by a `DELETE`, or by a flush
/// of inline deletion markers.
const DELETED_FROM_TABLE: &str = "deleted_from_table";

/// The `change` of the rows [`unnamed_schemas`] returns.
pub const UNNAMED_SCHEMA: &str = "schema not in srdp.toml";

/// One entry of `changes_made`: its kind and what it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub kind: String,
    pub target: Target,
}

/// What a change names: a catalog id (table, view or schema), or quoted names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Id(i64),
    /// `"schema"` or `"schema"."table"`.
    Names(Vec<String>),
}

/// Parses DuckLake's `changes_made` text: comma-separated `kind:value` entries whose value is a
/// catalog id or double-quoted identifiers joined by dots (quotes doubled inside).
pub fn parse_changes(text: &str) -> std::result::Result<Vec<Change>, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let colon = chars[i..]
            .iter()
            .position(|&c| c == ':')
            .ok_or_else(|| format!("no ':' after position {i} in '{text}'"))?;
        let kind: String = chars[i..i + colon].iter().collect();
        i += colon + 1;
        let target = if chars.get(i) == Some(&'"') {
            let mut names = Vec::new();
            loop {
                // chars[i] is the opening quote of one identifier.
                let mut name = String::new();
                i += 1;
                loop {
                    match chars.get(i) {
                        Some('"') if chars.get(i + 1) == Some(&'"') => {
                            name.push('"');
                            i += 2;
                        }
                        Some('"') => {
                            i += 1;
                            break;
                        }
                        Some(&c) => {
                            name.push(c);
                            i += 1;
                        }
                        None => return Err(format!("unterminated name in '{text}'")),
                    }
                }
                names.push(name);
                if chars.get(i) == Some(&'.') && chars.get(i + 1) == Some(&'"') {
                    i += 1;
                } else {
                    break;
                }
            }
            Target::Names(names)
        } else {
            let end = chars[i..]
                .iter()
                .position(|&c| c == ',')
                .map_or(chars.len(), |p| i + p);
            let value: String = chars[i..end].iter().collect();
            i = end;
            Target::Id(
                value
                    .parse()
                    .map_err(|_| format!("'{value}' is neither an id nor a quoted name"))?,
            )
        };
        out.push(Change { kind, target });
        match chars.get(i) {
            None => {}
            Some(',') => i += 1,
            Some(c) => return Err(format!("unexpected '{c}' at position {i} in '{text}'")),
        }
    }
    Ok(out)
}

/// The word the audit uses for a DuckLake change kind (an unknown kind is shown as it is).
pub fn change_word(kind: &str) -> &str {
    match kind {
        "created_schema" => "schema created",
        "dropped_schema" => "schema dropped",
        "created_table" => "created",
        "inserted_into_table" | "inlined_insert" => "inserted",
        "deleted_from_table" | "inlined_delete" => "deleted",
        "altered_table" => "altered",
        "dropped_table" => "dropped",
        "created_view" => "view created",
        "altered_view" => "view altered",
        "dropped_view" => "view dropped",
        "inline_flush" => "flushed",
        "merge_adjacent" => "compacted",
        "rewrite_delete" => "rewritten",
        other => other,
    }
}

/// Changes that rewrite how a table is stored but not what it holds: only DuckLake's
/// maintenance calls make them (`ducklake_flush_inlined_data`, `ducklake_merge_adjacent_files`,
/// `ducklake_rewrite_data_files`).
fn is_maintenance(change: &str) -> bool {
    matches!(change, "flushed" | "compacted" | "rewritten")
}

/// A `deleted_from_table` change of srdp's author to verify: did any row of `schema.table`
/// change at `snapshot_id`? (None did when srdp's flush only moved inline deletion markers into
/// a delete file.)
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RowCheck {
    pub snapshot_id: i64,
    pub schema: String,
    pub table: String,
}

impl RowCheck {
    /// `SELECT count(*) FROM ducklake_table_changes(...)` of the table at exactly this snapshot,
    /// on the lake attached as `alias` (DuckLake binds the table as of that snapshot, so a
    /// table renamed or dropped since is still found).
    pub fn query(&self, alias: &str) -> String {
        format!(
            "SELECT count(*) FROM ducklake_table_changes({}, {}, {}, {id}, {id})",
            Literal::new(alias),
            Literal::new(&self.schema),
            Literal::new(&self.table),
            id = self.snapshot_id
        )
    }
}

/// What each [`RowCheck`] found: the rows changed at its snapshot, or why that could not be read.
pub type RowChecks = BTreeMap<RowCheck, std::result::Result<i64, String>>;

/// The [`RowCheck`]s that [`audit`] needs for these snapshots: each `deleted_from_table` change
/// authored by [`MAINTENANCE_AUTHOR`] whose table the metadata still names, once each.
pub fn row_checks(
    snapshots: &[Snapshot],
    versions: &[Version],
    since: &Since,
) -> std::result::Result<Vec<RowCheck>, String> {
    let mut out = BTreeSet::new();
    for s in snapshots.iter().filter(|s| since.includes(s)) {
        if s.author.as_deref() != Some(MAINTENANCE_AUTHOR) {
            continue;
        }
        let changes = parse_changes(s.changes.as_deref().unwrap_or(""))
            .map_err(|e| format!("snapshot {}: {e}", s.id))?;
        for c in changes.iter().filter(|c| c.kind == DELETED_FROM_TABLE) {
            if let (Some(schema), Some(table)) = locate(c, versions, s.id) {
                out.insert(RowCheck {
                    snapshot_id: s.id,
                    schema,
                    table,
                });
            }
        }
    }
    Ok(out.into_iter().collect())
}

/// One snapshot as the metadata stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub id: i64,
    /// Microseconds since the Unix epoch.
    pub time: i64,
    pub author: Option<String>,
    pub message: Option<String>,
    pub changes: Option<String>,
}

/// One version of a catalog object: a table, view or schema from `begin` on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    pub kind: ObjectKind,
    pub id: i64,
    pub name: String,
    /// The schema of a table or view.
    pub schema_id: Option<i64>,
    pub begin: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectKind {
    Table,
    View,
    Schema,
}

impl ObjectKind {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "table" => Some(ObjectKind::Table),
            "view" => Some(ObjectKind::View),
            "schema" => Some(ObjectKind::Schema),
            _ => None,
        }
    }
}

/// From which snapshot on the audit reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Since {
    All,
    Snapshot(i64),
    /// Microseconds since the Unix epoch.
    Time(i64),
}

impl Since {
    fn includes(&self, s: &Snapshot) -> bool {
        match *self {
            Since::All => true,
            Since::Snapshot(id) => s.id >= id,
            Since::Time(t) => s.time >= t,
        }
    }
}

/// The `since :=` text: a snapshot id (`Ok(Ok(id))`) or text to read as a timestamp (`Ok(Err)`).
pub fn parse_since(text: &str) -> Result<std::result::Result<i64, String>> {
    let t = text.trim();
    match t.parse::<i64>() {
        Ok(id) if id < 0 => Err(SrdpError::InvalidArgument(format!(
            "since := must be a snapshot id (0 or more) or a timestamp, got '{t}'"
        ))),
        Ok(id) => Ok(Ok(id)),
        Err(_) => Ok(Err(t.to_string())),
    }
}

/// One row of `srdp_write_audit`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRow {
    pub snapshot_id: Option<i64>,
    pub snapshot_time: Option<i64>,
    pub author: Option<String>,
    pub message: Option<String>,
    pub schema: Option<String>,
    pub table: Option<String>,
    pub change: String,
    pub owner: Option<String>,
    /// The `srdp.toml` entry that gives the schema to its owner ([`crate::rules::Owner::rule`]):
    /// `schema 'curated'`, `pattern 'dbt_*'`, ...
    pub ownership: Option<String>,
    pub allowed: bool,
    pub note: Option<String>,
}

/// The name of object `id` as of snapshot `at`: its latest version that began by then.
fn version_at<'a>(
    versions: &'a [Version],
    kinds: &[ObjectKind],
    id: i64,
    at: i64,
) -> Option<&'a Version> {
    versions
        .iter()
        .filter(|v| v.id == id && v.begin <= at && kinds.contains(&v.kind))
        .max_by_key(|v| v.begin)
}

/// (schema, table) a change names at snapshot `at`; `None` for what the metadata cannot name.
fn locate(change: &Change, versions: &[Version], at: i64) -> (Option<String>, Option<String>) {
    let schema_level = change.kind.ends_with("_schema");
    match &change.target {
        Target::Names(names) => match names.as_slice() {
            [schema] => (Some(schema.clone()), None),
            [schema, table, ..] => (Some(schema.clone()), Some(table.clone())),
            [] => (None, None),
        },
        Target::Id(id) if schema_level => (
            version_at(versions, &[ObjectKind::Schema], *id, at).map(|v| v.name.clone()),
            None,
        ),
        Target::Id(id) => {
            let kinds = if change.kind.ends_with("_view") {
                [ObjectKind::View, ObjectKind::Table]
            } else {
                [ObjectKind::Table, ObjectKind::View]
            };
            match version_at(versions, &kinds, *id, at) {
                Some(v) => (
                    v.schema_id
                        .and_then(|s| version_at(versions, &[ObjectKind::Schema], s, at))
                        .map(|s| s.name.clone()),
                    Some(v.name.clone()),
                ),
                None => (None, None),
            }
        }
    }
}

/// Where `single_writer` was relaxed, for notes: `<file>:<line>`, or the file.
fn relaxed_by(config: &Config) -> Option<String> {
    let rule = config.rules.single_writer;
    (!rule.enabled).then(|| match rule.line {
        Some(l) => format!("{}:{l}", config.path.display()),
        None => config.path.display().to_string(),
    })
}

/// A write's verdict: the schema's owner and the entry that names it, whether the write was
/// allowed, and the note that says why (or why not).
struct Verdict {
    owner: Option<String>,
    ownership: Option<String>,
    allowed: bool,
    note: Option<String>,
}

/// Whether the write was allowed, and the note that says why (or why not).
fn judge(
    config: &Config,
    def: &CatalogDef,
    snapshot_id: i64,
    author: Option<&str>,
    schema: Option<&str>,
    change: &str,
    markers_flush: Option<&std::result::Result<i64, String>>,
) -> Verdict {
    let found = schema.and_then(|s| owner(def, s));
    let owned = found.as_ref().map(|o| (o.writers.clone(), o.layer.clone()));
    let owner = owned.as_ref().map(|(w, _)| w.join(", "));
    let relaxed = relaxed_by(config);
    let relaxed_note = |why: String| match &relaxed {
        Some(by) => (
            true,
            Some(format!("single_writer is relaxed by {by}: {why}")),
        ),
        None => (false, Some(why)),
    };
    let (allowed, note) = if snapshot_id == 0 {
        (true, Some("DuckLake created the catalog".to_string()))
    } else if let Some(Ok(0)) = markers_flush {
        (
            true,
            Some(
                "srdp maintenance: a flush wrote inline deletion markers to a delete file; no row \
                 changed in this snapshot"
                    .to_string(),
            ),
        )
    } else if is_maintenance(change) {
        let by = match author {
            Some(a) if a == MAINTENANCE_AUTHOR => "srdp maintenance".to_string(),
            Some(a) => format!("maintenance by '{a}'"),
            None => "maintenance without a commit author".to_string(),
        };
        (true, Some(format!("{by}; the rows are unchanged")))
    } else if let Some(schema) = schema {
        let unchecked = match markers_flush {
            Some(Err(e)) => format!(
                " (srdp could not read whether rows changed in this snapshot, so it counts as a \
                 deletion: {e})"
            ),
            _ => String::new(),
        };
        let (allowed, note) = match (author, &owned) {
            (None, _) => relaxed_note("unknown writer (no commit author)".to_string()),
            (Some(a), Some((owners, _))) if owners.iter().any(|w| w == a) => (true, None),
            (Some(a), Some((owners, _))) => relaxed_note(format!(
                "'{a}' wrote schema '{schema}', owned by '{}'",
                owners.join(", ")
            )),
            (Some(a), None) => relaxed_note(format!(
                "'{a}' wrote schema '{schema}', which srdp.toml does not name"
            )),
        };
        (allowed, note.map(|n| n + &unchecked))
    } else {
        (
            false,
            Some("the metadata no longer names what this change touched".to_string()),
        )
    };
    Verdict {
        owner,
        ownership: found.map(|o| o.rule),
        allowed,
        note,
    }
}

/// One audit row per snapshot and (schema, table, change) it made, in snapshot order; each
/// snapshot's rows in (schema, table, change) order. `checked`: what the [`row_checks`] of these
/// snapshots found; a `deleted_from_table` of srdp's author whose check found no changed row is
/// the flush of inline deletion markers it is (change `flushed`), any other is a deletion.
pub fn audit(
    config: &Config,
    def: &CatalogDef,
    snapshots: &[Snapshot],
    versions: &[Version],
    since: &Since,
    checked: &RowChecks,
) -> std::result::Result<Vec<AuditRow>, String> {
    let mut rows = Vec::new();
    for s in snapshots.iter().filter(|s| since.includes(s)) {
        let changes = parse_changes(s.changes.as_deref().unwrap_or(""))
            .map_err(|e| format!("snapshot {}: {e}", s.id))?;
        let mut touched: BTreeMap<(Option<String>, Option<String>, String), Option<_>> =
            BTreeMap::new();
        for c in &changes {
            let (schema, table) = locate(c, versions, s.id);
            let check = match (&schema, &table) {
                (Some(schema), Some(table))
                    if c.kind == DELETED_FROM_TABLE
                        && s.author.as_deref() == Some(MAINTENANCE_AUTHOR) =>
                {
                    checked.get(&RowCheck {
                        snapshot_id: s.id,
                        schema: schema.clone(),
                        table: table.clone(),
                    })
                }
                _ => None,
            };
            let word = match check {
                Some(Ok(0)) => "flushed",
                _ => change_word(&c.kind),
            };
            // A verified markers flush and DuckLake's own `inline_flush` of the same table are
            // one `flushed` row; the first change of the word decides its verdict.
            touched
                .entry((schema, table, word.to_string()))
                .or_insert(check);
        }
        for ((schema, table, change), check) in touched {
            let verdict = judge(
                config,
                def,
                s.id,
                s.author.as_deref(),
                schema.as_deref(),
                &change,
                check,
            );
            rows.push(AuditRow {
                snapshot_id: Some(s.id),
                snapshot_time: Some(s.time),
                author: s.author.clone(),
                message: s.message.clone(),
                schema,
                table,
                change,
                owner: verdict.owner,
                ownership: verdict.ownership,
                allowed: verdict.allowed,
                note: verdict.note,
            });
        }
    }
    Ok(rows)
}

/// DuckLake's own schema, which every catalog has from its first snapshot.
pub const DUCKLAKE_DEFAULT_SCHEMA: &str = "main";

/// Whether any table or view, live or dropped, was ever created in a schema called `schema`.
fn ever_written(versions: &[Version], schema: &str) -> bool {
    let ids: BTreeSet<i64> = versions
        .iter()
        .filter(|v| v.kind == ObjectKind::Schema && v.name == schema)
        .map(|v| v.id)
        .collect();
    versions
        .iter()
        .any(|v| v.kind != ObjectKind::Schema && v.schema_id.is_some_and(|id| ids.contains(&id)))
}

/// One row per live schema that `srdp.toml` gives to no writer, except DuckLake's own `main`
/// while nothing was ever written to it (`versions`: every table, view and schema version).
pub fn unnamed_schemas(
    config: &Config,
    def: &CatalogDef,
    live: &[String],
    versions: &[Version],
) -> Vec<AuditRow> {
    let relaxed = relaxed_by(config);
    live.iter()
        .filter(|s| owner(def, s).is_none())
        .filter(|s| *s != DUCKLAKE_DEFAULT_SCHEMA || ever_written(versions, s))
        .map(|s| AuditRow {
            snapshot_id: None,
            snapshot_time: None,
            author: None,
            message: None,
            schema: Some(s.clone()),
            table: None,
            change: UNNAMED_SCHEMA.to_string(),
            owner: None,
            ownership: None,
            allowed: relaxed.is_some(),
            note: Some(match &relaxed {
                Some(by) => format!("single_writer is relaxed by {by}: any writer may write it"),
                None => format!(
                    "no writer may write it while single_writer is on; define \
                     [catalogs.{}.schemas.{s}] with writer and layer, or drop it",
                    def.name
                ),
            }),
        })
        .collect()
}

/// The metadata queries of the audit, for lake `alias` with metadata schema `schema`.
pub struct AuditQueries {
    prefix: String,
}

impl AuditQueries {
    pub fn new(alias: &str, metadata_schema: &str) -> Self {
        AuditQueries {
            prefix: format!(
                "{}.{}",
                metadata_catalog(alias),
                Ident::new(metadata_schema)
            ),
        }
    }

    fn table(&self, name: &str) -> String {
        format!("{}.{}", self.prefix, Ident::new(name))
    }

    /// Snapshots from `min_id` on: `snapshot_id, time (µs), author, commit_message, changes_made`.
    pub fn snapshots(&self, min_id: i64) -> String {
        format!(
            "SELECT s.snapshot_id, epoch_us(s.snapshot_time::TIMESTAMPTZ), c.author, \
             c.commit_message, c.changes_made FROM {} s LEFT JOIN {} c \
             ON c.snapshot_id = s.snapshot_id WHERE s.snapshot_id >= {min_id} \
             ORDER BY s.snapshot_id",
            self.table("ducklake_snapshot"),
            self.table("ducklake_snapshot_changes")
        )
    }

    /// Every version of every table, view and schema: `kind, id, name, schema_id, begin`.
    pub fn versions(&self) -> String {
        format!(
            "SELECT 'table', table_id, table_name, schema_id, begin_snapshot FROM {} \
             UNION ALL SELECT 'view', view_id, view_name, schema_id, begin_snapshot FROM {} \
             UNION ALL SELECT 'schema', schema_id, schema_name, NULL::BIGINT, begin_snapshot FROM {}",
            self.table("ducklake_table"),
            self.table("ducklake_view"),
            self.table("ducklake_schema")
        )
    }
}

/// `SELECT epoch_us(TRY_CAST(<text> AS TIMESTAMPTZ))`: a `since :=` timestamp, NULL if it is none.
pub fn timestamp_micros(text: &crate::sql::Literal) -> String {
    format!("SELECT epoch_us(TRY_CAST({text} AS TIMESTAMPTZ))")
}

#[cfg(test)]
mod tests;
