//! Least-privilege PostgreSQL roles for one catalog's metadata schema (pure: SQL text out).
//!
//! The writer role owns the metadata schema's `ducklake_*` tables, so it can do everything
//! DuckLake needs to write, flush and compact: insert, update and delete metadata rows, and
//! create and drop the `ducklake_inlined_data_*` tables. The reader role can only connect, use
//! the schema and select from those tables, including the inlined-data tables the writer
//! creates later (default privileges). Neither role is a superuser, creates databases or roles,
//! replicates or bypasses row security. Every statement is idempotent, so a DBA (a superuser or
//! a role with CREATEROLE that owns the database) can run them again after changes.

use crate::config::{Backend, CatalogDef};
use crate::error::{Result, SrdpError};
use crate::sql::{Ident, Literal};

/// One statement of the role script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    /// `reader`, `writer` or `both`.
    pub applies_to: &'static str,
    pub sql: String,
}

/// The database name of a libpq `key=value` string.
pub fn database(conninfo: &str) -> Option<String> {
    conninfo.split_whitespace().find_map(|pair| {
        pair.strip_prefix("dbname=")
            .map(|v| v.trim_matches('\'').to_string())
    })
}

const ATTRIBUTES: &str = "LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS";

fn create_role(role: &Ident) -> String {
    format!(
        "DO $srdp$ BEGIN CREATE ROLE {role} {ATTRIBUTES}; \
         EXCEPTION WHEN duplicate_object THEN NULL; END $srdp$"
    )
}

/// `DO` block running `action` (a format() template with `%I.%I` for schema and table) for
/// every `ducklake_*` table of the schema.
fn for_each_ducklake_table(schema: &str, action: &str) -> String {
    format!(
        "DO $srdp$ DECLARE t record; BEGIN FOR t IN SELECT tablename FROM pg_tables \
         WHERE schemaname = {schema} AND tablename LIKE 'ducklake\\_%' LOOP \
         EXECUTE format({action}, {schema}, t.tablename); END LOOP; END $srdp$",
        schema = Literal::new(schema),
        action = Literal::new(action),
    )
}

/// The role script for `def`, with the given role names.
pub fn postgres_roles(def: &CatalogDef, reader: &str, writer: &str) -> Result<Vec<Statement>> {
    let Backend::Postgres { conninfo } = &def.backend else {
        return Err(SrdpError::InvalidArgument(format!(
            "catalog '{}' has a {} catalog; roles are only generated for PostgreSQL catalogs \
             (metadata = \"postgres:...\")",
            def.name,
            def.backend.name()
        )));
    };
    let db = database(conninfo).ok_or_else(|| {
        SrdpError::InvalidArgument(format!(
            "catalog '{}': the metadata connection names no dbname; add dbname=<database> to \
             metadata in srdp.toml",
            def.name
        ))
    })?;
    if reader == writer {
        return Err(SrdpError::InvalidArgument(format!(
            "reader_role and writer_role must differ, both are '{reader}'"
        )));
    }
    let (r, w) = (Ident::new(reader), Ident::new(writer));
    let schema = Ident::new(&def.metadata_schema);
    let stmt = |applies_to, sql: String| Statement { applies_to, sql };
    Ok(vec![
        stmt("writer", create_role(&w)),
        stmt("writer", format!("ALTER ROLE {w} {ATTRIBUTES}")),
        stmt("reader", create_role(&r)),
        stmt("reader", format!("ALTER ROLE {r} {ATTRIBUTES}")),
        stmt(
            "both",
            format!("GRANT CONNECT ON DATABASE {} TO {w}, {r}", Ident::new(&db)),
        ),
        stmt(
            "writer",
            format!("CREATE SCHEMA IF NOT EXISTS {schema} AUTHORIZATION {w}"),
        ),
        stmt("writer", format!("GRANT USAGE, CREATE ON SCHEMA {schema} TO {w}")),
        stmt(
            "writer",
            for_each_ducklake_table(
                &def.metadata_schema,
                &format!("ALTER TABLE %I.%I OWNER TO {}", w.as_sql().replace('%', "%%")),
            ),
        ),
        stmt("reader", format!("GRANT USAGE ON SCHEMA {schema} TO {r}")),
        stmt(
            "reader",
            for_each_ducklake_table(
                &def.metadata_schema,
                &format!("GRANT SELECT ON %I.%I TO {}", r.as_sql().replace('%', "%%")),
            ),
        ),
        stmt(
            "reader",
            format!(
                "ALTER DEFAULT PRIVILEGES FOR ROLE {w} IN SCHEMA {schema} GRANT SELECT ON TABLES TO {r}"
            ),
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse;
    use std::path::Path;

    fn def(metadata: &str) -> CatalogDef {
        parse(
            Path::new("/p/srdp.toml"),
            &format!("[catalogs.pg]\nmetadata = \"{metadata}\"\nmetadata_schema = \"lake\"\ndata_path = \"s3://b/p/\"\n"),
        )
        .unwrap()
        .catalog("pg")
        .unwrap()
        .clone()
    }

    #[test]
    fn the_script_is_exact() {
        let script =
            postgres_roles(&def("postgres:dbname=cat host=h"), "pg_reader", "pg_writer").unwrap();
        let text: Vec<String> = script
            .iter()
            .map(|s| format!("{}: {}", s.applies_to, s.sql))
            .collect();
        assert_eq!(
            text,
            [
                "writer: DO $srdp$ BEGIN CREATE ROLE \"pg_writer\" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS; EXCEPTION WHEN duplicate_object THEN NULL; END $srdp$",
                "writer: ALTER ROLE \"pg_writer\" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS",
                "reader: DO $srdp$ BEGIN CREATE ROLE \"pg_reader\" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS; EXCEPTION WHEN duplicate_object THEN NULL; END $srdp$",
                "reader: ALTER ROLE \"pg_reader\" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS",
                "both: GRANT CONNECT ON DATABASE \"cat\" TO \"pg_writer\", \"pg_reader\"",
                "writer: CREATE SCHEMA IF NOT EXISTS \"lake\" AUTHORIZATION \"pg_writer\"",
                "writer: GRANT USAGE, CREATE ON SCHEMA \"lake\" TO \"pg_writer\"",
                "writer: DO $srdp$ DECLARE t record; BEGIN FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = 'lake' AND tablename LIKE 'ducklake\\_%' LOOP EXECUTE format('ALTER TABLE %I.%I OWNER TO \"pg_writer\"', 'lake', t.tablename); END LOOP; END $srdp$",
                "reader: GRANT USAGE ON SCHEMA \"lake\" TO \"pg_reader\"",
                "reader: DO $srdp$ DECLARE t record; BEGIN FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = 'lake' AND tablename LIKE 'ducklake\\_%' LOOP EXECUTE format('GRANT SELECT ON %I.%I TO \"pg_reader\"', 'lake', t.tablename); END LOOP; END $srdp$",
                "reader: ALTER DEFAULT PRIVILEGES FOR ROLE \"pg_writer\" IN SCHEMA \"lake\" GRANT SELECT ON TABLES TO \"pg_reader\"",
            ]
        );
    }

    #[test]
    fn names_are_quoted() {
        let script = postgres_roles(&def("postgres:dbname=cat"), "r\"x", "w%").unwrap();
        assert!(script[2].sql.contains("CREATE ROLE \"r\"\"x\" LOGIN"));
        assert!(script[7].sql.contains("OWNER TO \"w%%\"'"));
        assert_eq!(
            postgres_roles(&def("postgres:host=h"), "r", "w").unwrap_err().to_string(),
            "catalog 'pg': the metadata connection names no dbname; add dbname=<database> to metadata in srdp.toml"
        );
    }

    #[test]
    fn errors() {
        assert_eq!(
            postgres_roles(&def("x.ducklake"), "r", "w")
                .unwrap_err()
                .to_string(),
            "catalog 'pg' has a duckdb catalog; roles are only generated for PostgreSQL catalogs (metadata = \"postgres:...\")"
        );
    }
}
