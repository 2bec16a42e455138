//! Least-privilege PostgreSQL roles for one catalog's metadata schema (pure: SQL text out).
//!
//! The writer role owns the metadata schema's `ducklake_*` tables, so it can do everything
//! DuckLake needs to write, flush and compact: insert, update and delete metadata rows, and
//! create and drop the `ducklake_inlined_data_*` tables. The reader role can only connect, use
//! the schema and select from those tables, including the inlined-data tables the writer
//! creates later (default privileges). Neither role is a superuser, creates databases or roles,
//! replicates or bypasses row security. Every statement is idempotent, so a DBA (a superuser or
//! a role with CREATEROLE that owns the database) can run them again after changes.
//!
//! Every statement ends in `;`, so the rows written one per line are a script `psql -f` runs.
//! PostgreSQL grants `CONNECT` and `TEMPORARY` on every database to `PUBLIC`: the script revokes
//! both on the catalog database (only the two roles get `CONNECT` back) and says, in SQL
//! comments, the lines a DBA runs for the cluster's other databases, which it leaves alone since
//! they concern every role of the cluster. The comments hold no name from the definition, so no
//! name can end a comment early.

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
    crate::libpq::parse(conninfo)
        .ok()?
        .get("dbname")
        .map(str::to_string)
}

const ATTRIBUTES: &str = "LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS";

/// PostgreSQL's longest identifier in bytes (NAMEDATALEN - 1); a longer name is truncated
/// silently by the server, so two names could become one.
const MAX_NAME_BYTES: usize = 63;

/// Role names the server reserves (`CREATE ROLE public` is refused; the others are keywords
/// that name the current role).
const RESERVED_ROLES: [&str; 5] = [
    "public",
    "none",
    "current_user",
    "current_role",
    "session_user",
];

/// A string literal for PostgreSQL: `'...'` with quotes doubled, or `E'...'` with backslashes
/// doubled too when the text has one, so it reads the same whatever
/// `standard_conforming_strings` is.
fn pg_literal(raw: &str) -> String {
    if raw.contains('\\') {
        format!("E'{}'", raw.replace('\\', "\\\\").replace('\'', "''"))
    } else {
        Literal::new(raw).as_sql().to_string()
    }
}

/// `DO $tag$ body $tag$` with a dollar-quote tag that does not occur in `body`, so no name in
/// the body can end the block early.
fn do_block(body: &str) -> String {
    let mut tag = "$srdp$".to_string();
    let mut n = 0;
    while body.contains(&tag) {
        n += 1;
        tag = format!("$srdp{n}$");
    }
    format!("DO {tag} {body} {tag}")
}

fn create_role(role: &Ident) -> String {
    do_block(&format!(
        "BEGIN CREATE ROLE {role} {ATTRIBUTES}; EXCEPTION WHEN duplicate_object THEN NULL; END;"
    ))
}

/// `DO` block running `action` (a format() template with `%I.%I` for schema and table) for
/// every `ducklake_*` table of the schema.
fn for_each_ducklake_table(schema: &str, action: &str) -> String {
    do_block(&format!(
        "DECLARE t record; BEGIN FOR t IN SELECT tablename FROM pg_tables \
         WHERE schemaname = {schema} AND tablename LIKE 'ducklake\\_%' LOOP \
         EXECUTE format({action}, {schema}, t.tablename); END LOOP; END;",
        schema = pg_literal(schema),
        action = pg_literal(action),
    ))
}

/// Refuses a name PostgreSQL would reject, truncate or treat as a system object.
fn check_name(what: &str, name: &str, fix: &str) -> Result<()> {
    let problem = if name.to_ascii_lowercase().starts_with("pg_") {
        Some("starts with \"pg_\", a prefix PostgreSQL reserves for system roles and schemas")
    } else if what != "metadata_schema"
        && RESERVED_ROLES.contains(&name.to_ascii_lowercase().as_str())
    {
        Some("is a role name PostgreSQL reserves")
    } else if name.len() > MAX_NAME_BYTES {
        Some("is longer than PostgreSQL's 63-byte limit for names (it would be truncated)")
    } else if name.contains('\0') {
        Some("contains a NUL byte")
    } else {
        None
    };
    match problem {
        Some(problem) => Err(SrdpError::InvalidArgument(format!(
            "{what} '{name}' {problem}; {fix}"
        ))),
        None => Ok(()),
    }
}

/// The databases every cluster has and grants `CONNECT`, `TEMPORARY` to `PUBLIC` by default
/// (`template0` allows no connections).
const CLUSTER_DATABASES: [&str; 2] = ["postgres", "template1"];

/// The last statement: `PUBLIC`'s default `CONNECT` and `TEMPORARY` revoked on the catalog
/// database, with comments saying what remains and the lines a DBA runs for it.
fn revoke_public(db: &str) -> String {
    let others: Vec<String> = CLUSTER_DATABASES
        .iter()
        .filter(|name| **name != db)
        .map(|name| {
            format!(
                "--   REVOKE CONNECT, TEMPORARY ON DATABASE {} FROM PUBLIC;\n",
                Ident::new(name)
            )
        })
        .collect();
    format!(
        "-- PostgreSQL grants CONNECT and TEMPORARY on every database to PUBLIC. On the catalog\n\
         -- database both are revoked: only the two roles (granted CONNECT above), the owner and\n\
         -- superusers may connect, and only the owner and superusers may create temporary tables.\n\
         REVOKE CONNECT, TEMPORARY ON DATABASE {} FROM PUBLIC;\n\
         -- Both roles can still connect to the cluster's other databases and create temporary tables\n\
         -- there. Closing that changes every role of the cluster, so this script leaves it to the DBA,\n\
         -- who runs these lines once, and the same line for each database created later (a new\n\
         -- database grants both to PUBLIC again):\n\
         {}",
        Ident::new(db),
        others.concat().trim_end()
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
    check_name(
        "reader_role",
        reader,
        "pass another name with reader_role := '...'",
    )?;
    check_name(
        "writer_role",
        writer,
        "pass another name with writer_role := '...'",
    )?;
    check_name(
        "metadata_schema",
        &def.metadata_schema,
        &format!(
            "set another metadata_schema for catalog '{}' in srdp.toml",
            def.name
        ),
    )?;
    if reader == writer {
        return Err(SrdpError::InvalidArgument(format!(
            "reader_role and writer_role must differ, both are '{reader}'"
        )));
    }
    let (r, w) = (Ident::new(reader), Ident::new(writer));
    let schema = Ident::new(&def.metadata_schema);
    let stmt = |applies_to, sql: String| Statement {
        applies_to,
        sql: format!("{sql};"),
    };
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
        Statement {
            applies_to: "both",
            sql: revoke_public(&db),
        },
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
        let script = postgres_roles(
            &def("postgres:dbname=cat host=h"),
            "lake_reader",
            "lake_writer",
        )
        .unwrap();
        let text: Vec<String> = script
            .iter()
            .map(|s| format!("{}: {}", s.applies_to, s.sql))
            .collect();
        assert_eq!(
            text,
            [
                "writer: DO $srdp$ BEGIN CREATE ROLE \"lake_writer\" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS; EXCEPTION WHEN duplicate_object THEN NULL; END; $srdp$;",
                "writer: ALTER ROLE \"lake_writer\" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;",
                "reader: DO $srdp$ BEGIN CREATE ROLE \"lake_reader\" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS; EXCEPTION WHEN duplicate_object THEN NULL; END; $srdp$;",
                "reader: ALTER ROLE \"lake_reader\" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;",
                "both: GRANT CONNECT ON DATABASE \"cat\" TO \"lake_writer\", \"lake_reader\";",
                "writer: CREATE SCHEMA IF NOT EXISTS \"lake\" AUTHORIZATION \"lake_writer\";",
                "writer: GRANT USAGE, CREATE ON SCHEMA \"lake\" TO \"lake_writer\";",
                "writer: DO $srdp$ DECLARE t record; BEGIN FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = 'lake' AND tablename LIKE 'ducklake\\_%' LOOP EXECUTE format('ALTER TABLE %I.%I OWNER TO \"lake_writer\"', 'lake', t.tablename); END LOOP; END; $srdp$;",
                "reader: GRANT USAGE ON SCHEMA \"lake\" TO \"lake_reader\";",
                "reader: DO $srdp$ DECLARE t record; BEGIN FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = 'lake' AND tablename LIKE 'ducklake\\_%' LOOP EXECUTE format('GRANT SELECT ON %I.%I TO \"lake_reader\"', 'lake', t.tablename); END LOOP; END; $srdp$;",
                "reader: ALTER DEFAULT PRIVILEGES FOR ROLE \"lake_writer\" IN SCHEMA \"lake\" GRANT SELECT ON TABLES TO \"lake_reader\";",
    "both: -- PostgreSQL grants CONNECT and TEMPORARY on every database to PUBLIC. On the catalog\n\
                 -- database both are revoked: only the two roles (granted CONNECT above), the owner and\n\
                 -- superusers may connect, and only the owner and superusers may create temporary tables.\n\
                 REVOKE CONNECT, TEMPORARY ON DATABASE \"cat\" FROM PUBLIC;\n\
                 -- Both roles can still connect to the cluster's other databases and create temporary tables\n\
                 -- there. Closing that changes every role of the cluster, so this script leaves it to the DBA,\n\
                 -- who runs these lines once, and the same line for each database created later (a new\n\
                 -- database grants both to PUBLIC again):\n\
                 --   REVOKE CONNECT, TEMPORARY ON DATABASE \"postgres\" FROM PUBLIC;\n\
                 --   REVOKE CONNECT, TEMPORARY ON DATABASE \"template1\" FROM PUBLIC;",
            ]
        );
    }

    #[test]
    fn names_are_quoted() {
        let script = postgres_roles(&def("postgres:dbname=cat"), "r\"x", "w%").unwrap();
        assert!(script[2].sql.contains("CREATE ROLE \"r\"\"x\" LOGIN"));
        assert!(script[7].sql.contains("OWNER TO \"w%%\"'"));
        assert!(script.iter().all(|s| s.sql.ends_with(';')));
        assert_eq!(
            postgres_roles(&def("postgres:host=h"), "r", "w").unwrap_err().to_string(),
            "catalog 'pg': the metadata connection names no dbname; add dbname=<database> to metadata in srdp.toml"
        );
    }

    #[test]
    fn a_name_cannot_end_the_do_block() {
        let script = postgres_roles(
            &def("postgres:dbname=cat"),
            "r$srdp$; DROP TABLE x; --",
            "w",
        )
        .unwrap();
        assert_eq!(
            script[2].sql,
            "DO $srdp1$ BEGIN CREATE ROLE \"r$srdp$; DROP TABLE x; --\" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS; EXCEPTION WHEN duplicate_object THEN NULL; END; $srdp1$;"
        );
        assert_eq!(
            script[9].sql,
            "DO $srdp1$ DECLARE t record; BEGIN FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = 'lake' AND tablename LIKE 'ducklake\\_%' LOOP EXECUTE format('GRANT SELECT ON %I.%I TO \"r$srdp$; DROP TABLE x; --\"', 'lake', t.tablename); END LOOP; END; $srdp1$;"
        );
        assert_eq!(
            do_block("a $srdp$ $srdp1$ b"),
            "DO $srdp2$ a $srdp$ $srdp1$ b $srdp2$"
        );
    }

    #[test]
    fn the_catalog_database_is_closed_to_public_and_named_once() {
        // A database name with a quote, a space and upper case stays one quoted name, and no
        // comment holds it; a catalog in database "postgres" is not told to revoke it again.
        let script = postgres_roles(
            &def("postgres:dbname='Lake \\\\'s Cat'"),
            "lake_reader",
            "lake_writer",
        )
        .unwrap();
        assert_eq!(script.len(), 12);
        assert_eq!(
            script[4].sql,
            "GRANT CONNECT ON DATABASE \"Lake 's Cat\" TO \"lake_writer\", \"lake_reader\";"
        );
        let last = &script[11].sql;
        let code: Vec<&str> = last.lines().filter(|l| !l.starts_with("-- ")).collect();
        assert_eq!(
            code,
            ["REVOKE CONNECT, TEMPORARY ON DATABASE \"Lake 's Cat\" FROM PUBLIC;"]
        );
        assert_eq!(last.matches("Lake").count(), 1);
        let on_postgres = postgres_roles(&def("postgres:dbname=postgres"), "r", "w").unwrap();
        let last = &on_postgres[11].sql;
        assert!(last
            .contains("REVOKE CONNECT, TEMPORARY ON DATABASE \"postgres\" FROM PUBLIC;\n-- Both"));
        assert!(last
            .ends_with("(a new\n-- database grants both to PUBLIC again):\n--   REVOKE CONNECT, TEMPORARY ON DATABASE \"template1\" FROM PUBLIC;"));
    }

    #[test]
    fn literals_read_the_same_under_any_string_setting() {
        assert_eq!(pg_literal("it's"), "'it''s'");
        assert_eq!(pg_literal("a\\'b"), "E'a\\\\''b'");
    }

    #[test]
    fn reserved_and_truncated_names_are_refused() {
        let d = def("postgres:dbname=cat");
        assert_eq!(
            postgres_roles(&d, "pg_reader", "w").unwrap_err().to_string(),
            "reader_role 'pg_reader' starts with \"pg_\", a prefix PostgreSQL reserves for system roles and schemas; pass another name with reader_role := '...'"
        );
        assert_eq!(
            postgres_roles(&d, "r", "PUBLIC").unwrap_err().to_string(),
            "writer_role 'PUBLIC' is a role name PostgreSQL reserves; pass another name with writer_role := '...'"
        );
        let long = "r".repeat(64);
        assert_eq!(
            postgres_roles(&d, &long, "w").unwrap_err().to_string(),
            format!("reader_role '{long}' is longer than PostgreSQL's 63-byte limit for names (it would be truncated); pass another name with reader_role := '...'")
        );
        let mut pg = d.clone();
        pg.metadata_schema = "pg_lake".into();
        assert_eq!(
            postgres_roles(&pg, "r", "w").unwrap_err().to_string(),
            "metadata_schema 'pg_lake' starts with \"pg_\", a prefix PostgreSQL reserves for system roles and schemas; set another metadata_schema for catalog 'pg' in srdp.toml"
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
