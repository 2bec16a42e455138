//! Maintenance planning and error classification (pure; no DuckDB).
//!
//! * [`select`] picks the datasets a call touches, in (schema, table) order, or explains which
//!   exist when the selection matches nothing.
//! * [`classify`] decides what a failed step means: retry it, heal a stale catalog, or stop.
//! * [`auto_compact`] resolves DuckLake's `auto_compact` option the way DuckLake 1.0 does:
//!   table, then schema, then catalog, default true. DuckLake skips such tables even when a
//!   call names them, and srdp reports that instead of pretending.

use crate::error::{Result, SrdpError};

/// One DuckLake table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dataset {
    pub schema_id: i64,
    pub schema: String,
    pub table_id: i64,
    pub table: String,
}

impl Dataset {
    /// `schema.table`, as messages name it.
    pub fn name(&self) -> String {
        format!("{}.{}", self.schema, self.table)
    }
}

/// The datasets selected by `schema_name :=` and `table_name :=` (each optional). A table name
/// alone selects that table in every schema. Selecting something that does not exist is an
/// error that lists what does.
pub fn select(
    catalog: &str,
    all: &[Dataset],
    schemas: &[String],
    schema: Option<&str>,
    table: Option<&str>,
) -> Result<Vec<Dataset>> {
    if let Some(s) = schema {
        if !schemas.iter().any(|known| known == s) {
            return Err(SrdpError::InvalidArgument(format!(
                "no schema '{s}' in catalog '{catalog}' (schemas: {})",
                list(schemas.iter().cloned())
            )));
        }
    }
    let mut selected: Vec<Dataset> = all
        .iter()
        .filter(|d| schema.is_none_or(|s| d.schema == s))
        .filter(|d| table.is_none_or(|t| d.table == t))
        .cloned()
        .collect();
    if let (Some(t), true) = (table, selected.is_empty()) {
        let scope = schema.map_or(String::new(), |s| format!(" in schema '{s}'"));
        let candidates = all
            .iter()
            .filter(|d| schema.is_none_or(|s| d.schema == s))
            .map(Dataset::name);
        return Err(SrdpError::InvalidArgument(format!(
            "no dataset '{t}'{scope} in catalog '{catalog}' (datasets: {})",
            list(candidates)
        )));
    }
    selected.sort_by(|a, b| (&a.schema, &a.table).cmp(&(&b.schema, &b.table)));
    Ok(selected)
}

fn list(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.collect();
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}

/// What a failed maintenance step means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// A commit conflict or a busy catalog: run the step again after a wait.
    Retryable,
    /// DuckLake 1.0 read an inlined-data table another process dropped (duckdb/ducklake#1305):
    /// only DETACH + ATTACH heals it.
    StaleInlinedTable,
    /// Anything else: stop and report.
    Fatal,
}

/// Classifies a DuckDB error message from a maintenance step.
pub fn classify(message: &str) -> Failure {
    let lower = message.to_ascii_lowercase();
    if lower.contains("transactions can either make changes or perform compaction") {
        return Failure::Fatal;
    }
    if is_stale_inlined(&lower) {
        return Failure::StaleInlinedTable;
    }
    let transient = [
        "database is locked",
        "deadlock detected",
        "could not serialize",
        "exceeded the maximum retry count",
    ];
    if transient.iter().any(|t| lower.contains(t))
        || (lower.contains("failed to commit ducklake transaction") && lower.contains("conflict"))
        || lost_creation_race(&lower)
    {
        return Failure::Retryable;
    }
    Failure::Fatal
}

/// Two processes that create the same thing at once, where DuckLake 1.0 reports no conflict but
/// the loser's next attempt finds it created: a new PostgreSQL lake's metadata, which two first
/// attaches create at once (PostgreSQL refuses the loser's `CREATE SCHEMA IF NOT EXISTS` or
/// `CREATE TABLE` with a duplicate key in `pg_namespace` or `pg_type`, or says the relation
/// already exists, all under DuckLake's "Failed to initialize DuckLake"), and a DuckLake schema
/// two writers' first tables create (the second commit says its table `references schema id N
/// that does not exist`), and a new SQLite lake whose metadata one first attach is creating
/// while another probes it (the prober's read meets the creator's lock and DuckLake reports
/// only `Failed to probe DuckLake metadata: Current transaction is aborted`; 8 of 60 attaches
/// in 30 rounds of two processes, test_attach_processes.py).
fn lost_creation_race(lower: &str) -> bool {
    let duplicate = lower.contains("duplicate key value violates unique constraint");
    (lower.contains("failed to probe ducklake metadata")
        && lower.contains("current transaction is aborted"))
        || (lower.contains("failed to initialize ducklake")
            && (duplicate || (lower.contains("relation") && lower.contains("already exists"))))
        || (duplicate && lower.contains("pg_namespace_nspname_index"))
        || (lower.contains("references schema id") && lower.contains("that does not exist"))
}

/// `... ducklake_inlined_data_<t>_<v> does not exist` (SQLite/DuckDB and PostgreSQL wording).
/// On a PostgreSQL catalog the same stale cache makes a flush fail with DuckDB's internal error
/// `Attempted to access index 0 within vector of size 0` instead, which also invalidates the
/// DuckDB database (test_stale_inlined.py shows it): srdp then says that the process must open
/// a new database.
fn is_stale_inlined(lower: &str) -> bool {
    if lower.contains("internal error: attempted to access index 0 within vector of size 0") {
        return true;
    }
    // The same PostgreSQL case, when the internal error aborted the statement's transaction
    // first and DuckDB reports only that (seen intermittently in test_stale_inlined.py).
    if lower.contains("attempting to fetch from an unsuccessful query result")
        && lower.contains("current transaction is aborted")
    {
        return true;
    }
    // The same, when the flush runs in srdp's explicit transaction: DuckLake's clean-up of the
    // flushed inlined table is the statement that reports the aborted transaction.
    if lower.contains("failed to delete flushed inlined data")
        && lower.contains("current transaction is aborted")
    {
        return true;
    }
    let Some(at) = lower.find("ducklake_inlined_data_") else {
        return false;
    };
    let rest = &lower[at + "ducklake_inlined_data_".len()..];
    let digits = rest
        .split(|c: char| !(c.is_ascii_digit() || c == '_'))
        .next()
        .unwrap_or("");
    let mut parts = digits.split('_');
    let numbered = matches!((parts.next(), parts.next()), (Some(t), Some(v)) if !t.is_empty() && !v.is_empty());
    numbered && lower.contains("does not exist")
}

/// One option row of `ducklake_metadata` (`auto_compact`, `target_file_size`,
/// `rewrite_delete_threshold`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopedOption {
    pub key: String,
    /// `None` = catalog-wide, `Some("schema")`, `Some("table")`.
    pub scope: Option<String>,
    pub scope_id: Option<i64>,
    pub value: String,
}

/// The value of option `key` that applies to `dataset`, with where it is set: the table's,
/// else its schema's, else the catalog's (as DuckLake resolves options); `None` when unset.
pub fn scoped_value<'o>(
    options: &'o [ScopedOption],
    key: &str,
    dataset: &Dataset,
) -> Option<(&'o str, OptionScope)> {
    let find = |scope: Option<&str>, id: Option<i64>| {
        options.iter().find(|o| {
            o.key == key && o.scope.as_deref() == scope && (scope.is_none() || o.scope_id == id)
        })
    };
    find(Some("table"), Some(dataset.table_id))
        .map(|o| (o.value.as_str(), OptionScope::Table))
        .or_else(|| {
            find(Some("schema"), Some(dataset.schema_id))
                .map(|o| (o.value.as_str(), OptionScope::Schema))
        })
        .or_else(|| find(None, None).map(|o| (o.value.as_str(), OptionScope::Catalog)))
}

/// Where an option is set: on one table, one schema, or the whole catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionScope {
    Table,
    Schema,
    Catalog,
}

/// How srdp treats a dataset in a maintenance call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Upkeep {
    /// DuckLake maintains it.
    #[default]
    Maintained,
    /// `auto_compact = false` at this scope excludes it from DuckLake's bulk calls; srdp's steps
    /// are explicit, so they override it for the step (the platform's decision, ADR 000).
    Explicit(OptionScope),
    /// Excluded, and the caller asked srdp to honour that (`honor_auto_compact := true`).
    Skipped,
}

impl Upkeep {
    /// Whether srdp runs the dataset's steps.
    pub fn runs(self) -> bool {
        self != Upkeep::Skipped
    }

    /// The scope whose `auto_compact = false` the steps override.
    pub fn explicit(self) -> Option<OptionScope> {
        match self {
            Upkeep::Explicit(scope) => Some(scope),
            _ => None,
        }
    }
}

/// How srdp treats `dataset` (see [`Upkeep`]).
pub fn upkeep(options: &[ScopedOption], dataset: &Dataset, honor_auto_compact: bool) -> Upkeep {
    match auto_compact_excluded_at(options, dataset) {
        None => Upkeep::Maintained,
        Some(_) if honor_auto_compact => Upkeep::Skipped,
        Some(scope) => Upkeep::Explicit(scope),
    }
}

/// The scope of the `auto_compact = false` that makes DuckLake skip `dataset` (the table's
/// option, else its schema's, else the catalog's decides), `None` when DuckLake maintains it.
pub fn auto_compact_excluded_at(
    options: &[ScopedOption],
    dataset: &Dataset,
) -> Option<OptionScope> {
    let (value, scope) = scoped_value(options, "auto_compact", dataset)?;
    value.eq_ignore_ascii_case("false").then_some(scope)
}

/// Status words of result rows.
pub mod status {
    pub const FLUSHED: &str = "flushed";
    pub const COMPACTED: &str = "compacted";
    pub const NOTHING_TO_DO: &str = "nothing to do";
    pub const PLANNED: &str = "planned";
    pub const SKIPPED_AUTO_COMPACT: &str = "skipped: auto_compact is false";
}

/// The status of a flushed dataset.
pub fn flush_status(rows_flushed: i64, auto_compact: bool) -> &'static str {
    match (rows_flushed > 0, auto_compact) {
        (true, _) => status::FLUSHED,
        (false, false) => status::SKIPPED_AUTO_COMPACT,
        (false, true) => status::NOTHING_TO_DO,
    }
}

/// The status of a compacted dataset (flush, then merge).
pub fn compact_status(rows_flushed: i64, files_processed: i64, auto_compact: bool) -> &'static str {
    match (rows_flushed > 0 || files_processed > 0, auto_compact) {
        (true, _) => status::COMPACTED,
        (false, false) => status::SKIPPED_AUTO_COMPACT,
        (false, true) => status::NOTHING_TO_DO,
    }
}

/// The status of a dry-run row.
pub fn planned_status(auto_compact: bool) -> &'static str {
    if auto_compact {
        status::PLANNED
    } else {
        status::SKIPPED_AUTO_COMPACT
    }
}

/// What to do about a failed ATTACH, for the errors people meet when a catalog moves to a
/// server (appended to the redacted DuckDB message), or `None`.
pub fn attach_hint(message: &str, secret: Option<&str>) -> Option<String> {
    let lower = message.to_lowercase();
    let secret = secret.map_or_else(
        || "the role's DuckDB secret".to_string(),
        |s| format!("DuckDB secret '{s}'"),
    );
    if lower.contains("password authentication failed") || lower.contains("no password supplied") {
        Some(format!(
            "PostgreSQL refused the credentials: check USER and PASSWORD of {secret} \
             (CREATE OR REPLACE SECRET ...); nothing was attached"
        ))
    } else if lower.contains("connection refused")
        || lower.contains("could not connect")
        || lower.contains("could not translate host name")
        || lower.contains("timeout expired")
    {
        Some(
            "the PostgreSQL server is not reachable: check host and port in the catalog's \
             metadata and in its secret, and that the server runs; nothing was attached"
                .to_string(),
        )
    } else if lower.contains("permission denied") {
        Some(format!(
            "PostgreSQL refused an operation for the role of {secret}: a reader role can only \
             read, and a writer role needs the grants of srdp_postgres_roles(...); nothing was \
             attached"
        ))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ds(schema_id: i64, schema: &str, table_id: i64, table: &str) -> Dataset {
        Dataset {
            schema_id,
            schema: schema.into(),
            table_id,
            table: table.into(),
        }
    }

    fn lake() -> (Vec<Dataset>, Vec<String>) {
        (
            vec![
                ds(1, "raw", 3, "events"),
                ds(0, "main", 1, "t"),
                ds(1, "raw", 2, "users"),
                ds(0, "main", 4, "events"),
            ],
            vec!["main".into(), "raw".into(), "empty".into()],
        )
    }

    fn names(v: &[Dataset]) -> Vec<String> {
        v.iter().map(Dataset::name).collect()
    }

    #[test]
    fn selects_in_schema_table_order() {
        let (all, schemas) = lake();
        assert_eq!(
            names(&select("lake", &all, &schemas, None, None).unwrap()),
            ["main.events", "main.t", "raw.events", "raw.users"]
        );
        assert_eq!(
            names(&select("lake", &all, &schemas, Some("raw"), None).unwrap()),
            ["raw.events", "raw.users"]
        );
        assert_eq!(
            names(&select("lake", &all, &schemas, None, Some("events")).unwrap()),
            ["main.events", "raw.events"]
        );
        assert_eq!(
            names(&select("lake", &all, &schemas, Some("raw"), Some("users")).unwrap()),
            ["raw.users"]
        );
        assert!(select("lake", &all, &schemas, Some("empty"), None)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn selecting_what_does_not_exist_lists_what_does() {
        let (all, schemas) = lake();
        assert_eq!(
            select("lake", &all, &schemas, Some("rw"), None)
                .unwrap_err()
                .to_string(),
            "no schema 'rw' in catalog 'lake' (schemas: main, raw, empty)"
        );
        assert_eq!(
            select("lake", &all, &schemas, Some("raw"), Some("t"))
                .unwrap_err()
                .to_string(),
            "no dataset 't' in schema 'raw' in catalog 'lake' (datasets: raw.events, raw.users)"
        );
        assert_eq!(
            select("lake", &all, &schemas, None, Some("nope")).unwrap_err().to_string(),
            "no dataset 'nope' in catalog 'lake' (datasets: raw.events, main.t, raw.users, main.events)"
        );
        assert_eq!(
            select("lake", &[], &[], None, Some("x"))
                .unwrap_err()
                .to_string(),
            "no dataset 'x' in catalog 'lake' (datasets: none)"
        );
    }

    #[test]
    fn classifies_the_verified_error_texts() {
        let retry = [
            "TransactionContext Error: Failed to commit: Failed to commit DuckLake transaction.\nFailed to flush changes into DuckLake: database is locked",
            "Invalid Error: Failed to delete flushed inlined data in DuckLake from table ducklake_inlined_data_1_1: database is locked",
            "TransactionContext Error: Failed to commit: Failed to commit DuckLake transaction.\nTransaction conflict - attempting to compact table with index \"1\" - but another transaction has compacted it",
            "TransactionContext Error: Failed to commit: Failed to commit DuckLake transaction.\nFailed to delete flushed inlined data in DuckLake from table ducklake_inlined_data_1_1: Conflict on tuple deletion!",
            "Failed to flush changes into DuckLake: Failed to execute query \"INSERT INTO ...\": ERROR:  deadlock detected DETAIL: ...",
            "Exceeded the maximum retry count of 10 set by the ducklake_max_retry_count setting.",
            "ERROR: could not serialize access due to concurrent update",
            "srdp_attach_catalog: attaching catalog 'lake' as 'lake' (writer) failed: Invalid Error: Failed to initialize DuckLake: Failed to execute query \"CREATE SCHEMA  IF NOT EXISTS\"lake\"\": ERROR:  duplicate key value violates unique constraint \"pg_namespace_nspname_index\"\nDETAIL:  Key (nspname)=(lake) already exists.",
            "TransactionContext Error: Failed to commit: Failed to commit DuckLake transaction.\nTable with id 3 references schema id 2 that does not exist",
            "Invalid Error: Failed to initialize DuckLake: Failed to execute query \"CREATE TABLE \"lake\".\"ducklake_metadata\"(\"key\" VARCHAR NOT NULL, \"value\" VARCHAR NOT NULL, \"scope\" VARCHAR, \"scope_id\" BIGINT);\": ERROR:  relation \"ducklake_metadata\" already exists",
            "Invalid Error: Failed to initialize DuckLake: Failed to execute query \"CREATE TABLE \"lake\".\"ducklake_snapshot\"(...)\": ERROR:  duplicate key value violates unique constraint \"pg_type_typname_nsp_index\"\nDETAIL:  Key (typname, typnamespace)=(ducklake_snapshot, 16390) already exists.",
        ];
        for m in retry {
            assert_eq!(classify(m), Failure::Retryable, "{m}");
        }
        let stale = [
            "Catalog Error: Failed to read inlined data from DuckLake: Table with name ducklake_inlined_data_1_1 does not exist!\nDid you mean \"ducklake_inlined_data_1_2\"?",
            "Invalid Error: Failed to prepare COPY \"COPY (SELECT ...)\": ERROR:  relation \"public.ducklake_inlined_data_12_3\" does not exist",
            "TransactionContext Error: Failed to delete flushed inlined data in DuckLake from table ducklake_inlined_data_1_2: Current transaction is aborted (please ROLLBACK)",
        ];
        for m in stale {
            assert_eq!(classify(m), Failure::StaleInlinedTable, "{m}");
        }
        let fatal = [
            "TransactionContext Error: Failed to commit: Failed to commit DuckLake transaction.\nTransactions can either make changes OR perform compaction - not both",
            "Constraint Error: NOT NULL constraint failed: t.a",
            "Catalog Error: Table with name ducklake_inlined_data_tables does not exist!",
            "Binder Error: Invalid named parameter",
            "Constraint Error: duplicate key value violates unique constraint \"orders_pkey\"",
            "Catalog Error: Table with name orders already exists!",
        ];
        for m in fatal {
            assert_eq!(classify(m), Failure::Fatal, "{m}");
        }
    }

    fn opt(scope: Option<&str>, id: Option<i64>, value: &str) -> ScopedOption {
        ScopedOption {
            key: "auto_compact".into(),
            scope: scope.map(Into::into),
            scope_id: id,
            value: value.into(),
        }
    }

    #[test]
    fn an_option_resolves_by_its_own_key_table_then_schema_then_catalog() {
        let t = ds(7, "raw", 3, "events");
        let row = |key: &str, scope: Option<&str>, id: Option<i64>, value: &str| ScopedOption {
            key: key.into(),
            scope: scope.map(Into::into),
            scope_id: id,
            value: value.into(),
        };
        let options = [
            row("rewrite_delete_threshold", None, None, "0.5"),
            row("rewrite_delete_threshold", Some("table"), Some(4), "0.1"),
            row("target_file_size", Some("table"), Some(3), "1MB"),
            row("rewrite_delete_threshold", Some("schema"), Some(7), "0.25"),
        ];
        assert_eq!(
            scoped_value(&options, "rewrite_delete_threshold", &t),
            Some(("0.25", OptionScope::Schema))
        );
        assert_eq!(
            scoped_value(&options, "target_file_size", &t),
            Some(("1MB", OptionScope::Table))
        );
        assert_eq!(
            scoped_value(&options[..1], "rewrite_delete_threshold", &t),
            Some(("0.5", OptionScope::Catalog))
        );
        assert_eq!(scoped_value(&options, "auto_compact", &t), None);
    }

    #[test]
    fn the_deciding_false_is_found_at_its_scope() {
        let t = ds(7, "raw", 3, "events");
        let global = opt(None, None, "false");
        let schema = opt(Some("schema"), Some(7), "false");
        let table = opt(Some("table"), Some(3), "false");
        assert_eq!(auto_compact_excluded_at(&[], &t), None);
        assert_eq!(
            auto_compact_excluded_at(std::slice::from_ref(&global), &t),
            Some(OptionScope::Catalog)
        );
        assert_eq!(
            auto_compact_excluded_at(&[global.clone(), schema.clone()], &t),
            Some(OptionScope::Schema)
        );
        assert_eq!(
            auto_compact_excluded_at(&[global, schema, table], &t),
            Some(OptionScope::Table)
        );
    }

    #[test]
    fn auto_compact_resolves_table_then_schema_then_catalog() {
        let t = ds(7, "raw", 3, "events");
        let excluded = |options: &[ScopedOption]| auto_compact_excluded_at(options, &t);
        assert_eq!(
            excluded(&[
                opt(None, None, "false"),
                opt(Some("schema"), Some(7), "true")
            ]),
            None
        );
        assert_eq!(
            excluded(&[
                opt(Some("schema"), Some(7), "true"),
                opt(Some("table"), Some(3), "false")
            ]),
            Some(OptionScope::Table)
        );
        assert_eq!(
            excluded(&[
                opt(Some("schema"), Some(7), "false"),
                opt(Some("table"), Some(3), "true")
            ]),
            None
        );
        // Options of other tables and schemas do not count.
        assert_eq!(
            excluded(&[
                opt(Some("table"), Some(4), "false"),
                opt(Some("schema"), Some(8), "false")
            ]),
            None
        );
    }

    #[test]
    fn upkeep_runs_excluded_datasets_explicitly_unless_honoured() {
        let t = ds(7, "raw", 3, "events");
        let schema = [opt(Some("schema"), Some(7), "false")];
        assert_eq!(upkeep(&[], &t, false), Upkeep::Maintained);
        assert_eq!(upkeep(&[], &t, true), Upkeep::Maintained);
        assert_eq!(
            upkeep(&schema, &t, false),
            Upkeep::Explicit(OptionScope::Schema)
        );
        assert_eq!(upkeep(&schema, &t, true), Upkeep::Skipped);
        assert!(Upkeep::Explicit(OptionScope::Schema).runs() && !Upkeep::Skipped.runs());
        assert_eq!(
            Upkeep::Explicit(OptionScope::Table).explicit(),
            Some(OptionScope::Table)
        );
        assert_eq!(Upkeep::Maintained.explicit(), None);
    }

    #[test]
    fn statuses() {
        assert_eq!(flush_status(5, false), "flushed");
        assert_eq!(flush_status(0, false), "skipped: auto_compact is false");
        assert_eq!(flush_status(0, true), "nothing to do");
        assert_eq!(compact_status(0, 4, true), "compacted");
        assert_eq!(compact_status(0, 0, true), "nothing to do");
        assert_eq!(planned_status(true), "planned");
        assert_eq!(planned_status(false), "skipped: auto_compact is false");
    }

    #[test]
    fn attach_hints() {
        assert_eq!(
            attach_hint("FATAL:  password authentication failed for user \"x\"", Some("w")).as_deref(),
            Some("PostgreSQL refused the credentials: check USER and PASSWORD of DuckDB secret 'w' (CREATE OR REPLACE SECRET ...); nothing was attached")
        );
        assert!(attach_hint(
            "connection to server at \"127.0.0.1\", port 1 failed: Connection refused",
            None
        )
        .unwrap()
        .starts_with("the PostgreSQL server is not reachable"));
        assert_eq!(attach_hint("Catalog Error: something else", None), None);
    }

    #[test]
    fn postgres_stale_cache_internal_error_is_stale() {
        assert_eq!(
            classify("INTERNAL Error: Attempted to access index 0 within vector of size 0\n\nStack Trace: ..."),
            Failure::StaleInlinedTable
        );
        assert_eq!(classify("INTERNAL Error: something else"), Failure::Fatal);
        assert_eq!(
            classify("Invalid Input Error: Attempting to fetch from an unsuccessful query result\nError: TransactionContext Error: Current transaction is aborted (please ROLLBACK)"),
            Failure::StaleInlinedTable
        );
    }
}
