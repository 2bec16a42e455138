//! Quoting newtypes and the SQL text srdp emits.
//!
//! Every identifier and literal that reaches DuckDB goes through [`Ident`] or [`Literal`]: a
//! builder that takes `&Ident`/`&Literal` cannot be handed an unescaped string by mistake.
//! Builders return plain `String`s whose exact text is pinned by unit tests.
//!
//! Here: the quoting types, ATTACH and the lookups around it, session settings;
//! [`metadata`]: reads of DuckLake's metadata tables; [`maintenance`]: the statements of the
//! maintenance steps.

use std::fmt;

/// A SQL identifier, double-quoted with embedded quotes doubled: `"a ""b"""`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ident(String);

impl Ident {
    pub fn new(raw: &str) -> Self {
        Ident(format!("\"{}\"", raw.replace('"', "\"\"")))
    }
    pub fn as_sql(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Ident {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A SQL string literal, single-quoted with embedded quotes doubled: `'it''s'`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Literal(String);

impl Literal {
    pub fn new(raw: &str) -> Self {
        Literal(format!("'{}'", raw.replace('\'', "''")))
    }
    pub fn as_sql(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One option of an `ATTACH ... (...)` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttachOption {
    /// `NAME 'text'`
    Text(&'static str, Literal),
    /// `NAME 123`
    Number(&'static str, u64),
    /// `NAME` alone (a flag such as `READ_ONLY`).
    Flag(&'static str),
}

impl fmt::Display for AttachOption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttachOption::Text(name, value) => write!(f, "{name} {value}"),
            AttachOption::Number(name, value) => write!(f, "{name} {value}"),
            AttachOption::Flag(name) => f.write_str(name),
        }
    }
}

/// `ATTACH '<target>' AS "<alias>" (<options>)`.
pub fn attach(target: &Literal, alias: &Ident, options: &[AttachOption]) -> String {
    let options: Vec<String> = options.iter().map(ToString::to_string).collect();
    format!("ATTACH {target} AS {alias} ({})", options.join(", "))
}

/// `DETACH "<alias>"`.
pub fn detach(alias: &Ident) -> String {
    format!("DETACH {alias}")
}

/// Whether a database with this name is attached (case-insensitive, as DuckDB resolves names).
pub fn database_exists(alias: &Literal) -> String {
    format!("SELECT count(*) FROM duckdb_databases() WHERE lower(database_name) = lower({alias})")
}

/// Whether this session has a DuckDB secret of that name.
pub fn secret_exists(name: &Literal) -> String {
    format!("SELECT count(*) FROM duckdb_secrets() WHERE name = {name}")
}

/// The hidden database DuckLake attaches the metadata of lake `alias` under.
pub fn metadata_catalog(alias: &str) -> Ident {
    Ident::new(&format!("__ducklake_metadata_{alias}"))
}

pub mod maintenance;
pub mod metadata;

pub use maintenance::{
    delete_row_ids, flush, merge, merge_batch, rewrite, set_auto_compact, set_commit_message,
};
pub use metadata::{MetadataTables, MARKERS_ARRIVED, UNION_TERMS};

/// Gives the connection's session `setting` the value `value`, or its default (`None`).
pub fn session_setting(setting: &Ident, value: Option<&Literal>) -> String {
    match value {
        Some(value) => format!("SET SESSION {setting} = {value}"),
        None => format!("RESET SESSION {setting}"),
    }
}

/// The current value of DuckDB setting `name` (`value`, or no row).
pub fn setting_value(name: &Literal) -> String {
    format!("SELECT value FROM duckdb_settings() WHERE name = {name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_identifiers() {
        assert_eq!(Ident::new("lake").as_sql(), "\"lake\"");
        assert_eq!(
            Ident::new("a \"b\"; DROP").as_sql(),
            "\"a \"\"b\"\"; DROP\""
        );
    }

    #[test]
    fn quotes_literals() {
        assert_eq!(Literal::new("it's").as_sql(), "'it''s'");
        assert_eq!(
            Literal::new("'; DROP TABLE x; --").as_sql(),
            "'''; DROP TABLE x; --'"
        );
    }

    /// Undoing the quoting gives back the input, for awkward strings.
    #[test]
    fn quoting_round_trips() {
        for raw in ["", "'", "\"", "''\"\"", "a b;c", "x'y\"z", "ünï'cødé\n"] {
            let lit = Literal::new(raw).0;
            assert_eq!(lit[1..lit.len() - 1].replace("''", "'"), raw);
            let id = Ident::new(raw).0;
            assert_eq!(id[1..id.len() - 1].replace("\"\"", "\""), raw);
        }
    }

    #[test]
    fn builds_attach() {
        let sql = attach(
            &Literal::new("ducklake:sqlite:/l/it's.sqlite"),
            &Ident::new("my lake"),
            &[
                AttachOption::Text("DATA_PATH", Literal::new("/d/")),
                AttachOption::Number("DATA_INLINING_ROW_LIMIT", 1000),
                AttachOption::Flag("READ_ONLY"),
            ],
        );
        assert_eq!(
            sql,
            "ATTACH 'ducklake:sqlite:/l/it''s.sqlite' AS \"my lake\" \
             (DATA_PATH '/d/', DATA_INLINING_ROW_LIMIT 1000, READ_ONLY)"
        );
    }

    #[test]
    fn builds_lookups() {
        assert_eq!(detach(&Ident::new("l")), "DETACH \"l\"");
        assert_eq!(
            database_exists(&Literal::new("l")),
            "SELECT count(*) FROM duckdb_databases() WHERE lower(database_name) = lower('l')"
        );
        assert_eq!(
            secret_exists(&Literal::new("w")),
            "SELECT count(*) FROM duckdb_secrets() WHERE name = 'w'"
        );
    }

    #[test]
    fn builds_settings() {
        assert_eq!(
            setting_value(&Literal::new("threads")),
            "SELECT value FROM duckdb_settings() WHERE name = 'threads'"
        );
        assert_eq!(
            session_setting(
                &Ident::new("ducklake_target_file_size"),
                Some(&Literal::new("16MB"))
            ),
            "SET SESSION \"ducklake_target_file_size\" = '16MB'"
        );
        assert_eq!(
            session_setting(&Ident::new("ducklake_target_file_size"), None),
            "RESET SESSION \"ducklake_target_file_size\""
        );
    }
}
