//! How a catalog definition becomes an `ATTACH` statement (pure; no DuckDB).
//!
//! * `METADATA_SCHEMA` is always passed where the backend allows it (not SQLite), so every
//!   component finds the same lake and never silently creates another one in a default schema.
//! * `DATA_INLINING_ROW_LIMIT` comes from the definition as an ATTACH option, which is never
//!   persisted: options set with `set_option` at catalog, schema or table scope still win.
//! * SQLite catalogs use `META_JOURNAL_MODE 'WAL'` and a busy timeout: in the default journal
//!   mode maintenance starves while a loader writes.
//! * The reader role is `READ_ONLY`, which also stops DuckLake from creating a lake.
//! * PostgreSQL credentials come only from a DuckDB secret, passed as `META_SECRET`.

use crate::config::{Backend, CatalogDef, SQLITE_BUSY_TIMEOUT_MS};
use crate::error::{Result, SrdpError};
use crate::sql::{self, AttachOption, Ident, Literal};

/// Who is attaching.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Reader,
    Writer,
}

impl Role {
    /// Parses the `role :=` argument.
    pub fn parse(value: &str) -> Result<Role> {
        match value {
            "reader" => Ok(Role::Reader),
            "writer" => Ok(Role::Writer),
            other => Err(SrdpError::InvalidArgument(format!(
                "unknown role '{other}'; use role := 'reader' (the default, read-only) or role := 'writer'"
            ))),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Reader => "reader",
            Role::Writer => "writer",
        }
    }
}

/// Everything needed to attach one catalog under one alias.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachSpec {
    pub catalog: String,
    pub alias: String,
    pub role: Role,
    /// The full `ATTACH` statement; also the identity of the attachment.
    pub sql: String,
    /// The DuckDB secret this role needs, if the definition names one.
    pub secret: Option<String>,
    /// The local metadata file a reader needs to exist.
    pub metadata_file: Option<std::path::PathBuf>,
    pub metadata_display: String,
    /// The metadata backend: `duckdb`, `sqlite` or `postgres`.
    pub backend: &'static str,
    pub metadata_schema: String,
    pub data_path: String,
    pub data_inlining_row_limit: u64,
    pub retry: crate::retry::RetryPolicy,
}

impl AttachSpec {
    pub fn read_only(&self) -> bool {
        self.role == Role::Reader
    }

    /// `DETACH "<alias>"`.
    pub fn detach_sql(&self) -> String {
        sql::detach(&Ident::new(&self.alias))
    }
}

/// The statements that tell whether a local metadata file holds a DuckLake catalog, that is a
/// `ducklake_metadata` table in the metadata schema. DuckLake creates all its tables in one
/// metadata transaction, so a file without that table is a lake a writer has not created yet
/// (its first attach was killed, or never ran) and the writer's next attach creates it whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LakeProbe {
    /// Run first (the DuckDB file attached read-only under [`PROBE_ALIAS`]).
    pub before: Option<String>,
    /// One row, one count: 0 when the file holds no DuckLake catalog.
    pub count: String,
    /// Run last, also when `count` failed.
    pub after: Option<String>,
}

/// The alias a DuckDB metadata file is attached under while it is probed.
pub const PROBE_ALIAS: &str = "__srdp_lake_probe";

impl AttachSpec {
    /// How to probe the metadata file, for file-backed catalogs (`None` for PostgreSQL).
    pub fn lake_probe(&self) -> Option<LakeProbe> {
        let file = Literal::new(&self.metadata_file.as_ref()?.display().to_string());
        match self.backend {
            "sqlite" => Some(LakeProbe {
                before: None,
                count: format!(
                    "SELECT count(*) FROM sqlite_scan({file}, 'sqlite_master') \
                     WHERE type = 'table' AND name = 'ducklake_metadata'"
                ),
                after: None,
            }),
            "duckdb" => {
                let alias = Ident::new(PROBE_ALIAS);
                Some(LakeProbe {
                    before: Some(sql::attach(
                        &file,
                        &alias,
                        &[AttachOption::Flag("READ_ONLY")],
                    )),
                    count: format!(
                        "SELECT count(*) FROM duckdb_tables() WHERE database_name = {} \
                         AND schema_name = {} AND table_name = 'ducklake_metadata'",
                        Literal::new(PROBE_ALIAS),
                        Literal::new(&self.metadata_schema)
                    ),
                    after: Some(sql::detach(&alias)),
                })
            }
            _ => None,
        }
    }
}

/// Plans the attach of `def` under `alias` for `role`.
pub fn plan(def: &CatalogDef, alias: &str, role: Role) -> AttachSpec {
    let secret = match role {
        Role::Reader => def.reader_secret.clone(),
        Role::Writer => def.writer_secret.clone(),
    };
    let target = match &def.backend {
        Backend::DuckDbFile { path } => format!("ducklake:duckdb:{}", path.display()),
        Backend::Sqlite { path } => format!("ducklake:sqlite:{}", path.display()),
        Backend::Postgres { conninfo } => format!("ducklake:postgres:{conninfo}"),
    };
    let mut options = vec![AttachOption::Text(
        "DATA_PATH",
        Literal::new(&def.data_path),
    )];
    if !matches!(def.backend, Backend::Sqlite { .. }) {
        options.push(AttachOption::Text(
            "METADATA_SCHEMA",
            Literal::new(&def.metadata_schema),
        ));
    }
    options.push(AttachOption::Number(
        "DATA_INLINING_ROW_LIMIT",
        def.tunables.data_inlining_row_limit,
    ));
    match &def.backend {
        Backend::Sqlite { .. } => {
            options.push(AttachOption::Text("META_JOURNAL_MODE", Literal::new("WAL")));
            options.push(AttachOption::Number(
                "META_BUSY_TIMEOUT",
                SQLITE_BUSY_TIMEOUT_MS,
            ));
        }
        Backend::Postgres { .. } => {
            if let Some(secret) = &secret {
                options.push(AttachOption::Text("META_SECRET", Literal::new(secret)));
            }
        }
        Backend::DuckDbFile { .. } => {}
    }
    if role == Role::Reader {
        options.push(AttachOption::Flag("READ_ONLY"));
    }
    AttachSpec {
        catalog: def.name.clone(),
        alias: alias.to_string(),
        role,
        sql: sql::attach(&Literal::new(&target), &Ident::new(alias), &options),
        secret,
        metadata_file: def.backend.file().map(ToOwned::to_owned),
        metadata_display: def.backend.display(),
        backend: def.backend.name(),
        metadata_schema: def.metadata_schema.clone(),
        data_path: def.data_path.clone(),
        data_inlining_row_limit: def.tunables.data_inlining_row_limit,
        retry: def.tunables.retry(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse;
    use std::path::Path;

    fn def(toml: &str) -> CatalogDef {
        parse(Path::new("/p/srdp.toml"), toml)
            .unwrap()
            .catalogs
            .into_values()
            .next()
            .unwrap()
    }

    #[test]
    fn sqlite_reader() {
        let d = def("[catalogs.lake]\nmetadata = \"sqlite:c/lake.sqlite\"\ndata_path = \"data\"\n");
        let spec = plan(&d, "lake", Role::Reader);
        assert_eq!(
            spec.sql,
            "ATTACH 'ducklake:sqlite:/p/c/lake.sqlite' AS \"lake\" (DATA_PATH '/p/data/', \
             DATA_INLINING_ROW_LIMIT 1000, META_JOURNAL_MODE 'WAL', META_BUSY_TIMEOUT 5000, READ_ONLY)"
        );
        assert!(spec.read_only());
        assert_eq!(
            spec.metadata_file.as_deref(),
            Some(Path::new("/p/c/lake.sqlite"))
        );
    }

    #[test]
    fn duckdb_file_writer_with_schema_and_limit() {
        let d = def(
            "[catalogs.lake]\nmetadata = \"m/it's.ducklake\"\nmetadata_schema = \"meta\"\n\
             data_path = \"d\"\ndata_inlining_row_limit = 0\nwriter_secret = \"w\"\n",
        );
        let spec = plan(&d, "my \"lake\"", Role::Writer);
        assert_eq!(
            spec.sql,
            "ATTACH 'ducklake:duckdb:/p/m/it''s.ducklake' AS \"my \"\"lake\"\"\" (DATA_PATH '/p/d/', \
             METADATA_SCHEMA 'meta', DATA_INLINING_ROW_LIMIT 0)"
        );
        assert_eq!(spec.secret.as_deref(), Some("w"));
        assert_eq!(spec.detach_sql(), "DETACH \"my \"\"lake\"\"\"");
    }

    #[test]
    fn postgres_passes_the_role_secret() {
        let d = def(
            "[catalogs.pg]\nmetadata = \"postgres:dbname=lake host=127.0.0.1\"\ndata_path = \"s3://b/p/\"\n\
             writer_secret = \"lake_writer\"\nreader_secret = \"lake_reader\"\n",
        );
        assert_eq!(
            plan(&d, "pg", Role::Writer).sql,
            "ATTACH 'ducklake:postgres:dbname=lake host=127.0.0.1' AS \"pg\" (DATA_PATH 's3://b/p/', \
             METADATA_SCHEMA 'public', DATA_INLINING_ROW_LIMIT 1000, META_SECRET 'lake_writer')"
        );
        let reader = plan(&d, "pg", Role::Reader);
        assert_eq!(reader.secret.as_deref(), Some("lake_reader"));
        assert!(reader
            .sql
            .ends_with("META_SECRET 'lake_reader', READ_ONLY)"));
        assert_eq!(reader.metadata_file, None);
    }

    #[test]
    fn lake_probes_look_for_the_metadata_table() {
        let lite = def("[catalogs.lake]\nmetadata = \"sqlite:c/it's.sqlite\"\ndata_path = \"d\"\n");
        assert_eq!(
            plan(&lite, "lake", Role::Reader).lake_probe(),
            Some(LakeProbe {
                before: None,
                count: "SELECT count(*) FROM sqlite_scan('/p/c/it''s.sqlite', 'sqlite_master') \
                        WHERE type = 'table' AND name = 'ducklake_metadata'"
                    .into(),
                after: None,
            })
        );
        let duck = def(
            "[catalogs.lake]\nmetadata = \"c/lake.ducklake\"\nmetadata_schema = \"meta\"\n\
             data_path = \"d\"\n",
        );
        assert_eq!(
            plan(&duck, "lake", Role::Reader).lake_probe(),
            Some(LakeProbe {
                before: Some(
                    "ATTACH '/p/c/lake.ducklake' AS \"__srdp_lake_probe\" (READ_ONLY)".into()
                ),
                count: "SELECT count(*) FROM duckdb_tables() WHERE database_name = \
                        '__srdp_lake_probe' AND schema_name = 'meta' AND table_name = \
                        'ducklake_metadata'"
                    .into(),
                after: Some("DETACH \"__srdp_lake_probe\"".into()),
            })
        );
        let pg =
            def("[catalogs.pg]\nmetadata = \"postgres:dbname=lake\"\ndata_path = \"s3://b/\"\n");
        assert_eq!(plan(&pg, "pg", Role::Reader).lake_probe(), None);
    }

    #[test]
    fn roles_parse() {
        assert_eq!(Role::parse("writer").unwrap(), Role::Writer);
        assert_eq!(
            Role::parse("admin").unwrap_err().to_string(),
            "unknown role 'admin'; use role := 'reader' (the default, read-only) or role := 'writer'"
        );
    }
}
