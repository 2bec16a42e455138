//! Property tests of the two parsers that see user text: `srdp.toml` and libpq connection
//! strings. Thousands of generated inputs each: no input panics, and a secret placed anywhere
//! a value or a non-TOML line can be never appears in an error, a display or a redaction.

use proptest::prelude::*;
use srdp::{config, libpq, redact::redact};
use std::path::Path;

const SECRET: &str = "Zq9Secret";

fn cases() -> ProptestConfig {
    ProptestConfig {
        cases: 4000,
        ..ProptestConfig::default()
    }
}

/// libpq white space.
fn space() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![" ", "\t", "\n", "\r", "\x0b", "\x0c"]),
        0..3,
    )
    .prop_map(|v| v.concat())
}

/// `password` in every spelling libpq (or a typo of it) could carry, with any white space
/// around `=` and the secret bare, quoted or escaped.
fn password_pair() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec!["password", "PASSWORD", "Password", "sslpassword"]),
        space(),
        space(),
        prop::sample::select(vec![
            SECRET.to_string(),
            format!("'{SECRET}'"),
            format!("'a b {SECRET}'"),
            format!("'it\\'s{SECRET}'"),
            format!("x\\ {SECRET}"),
        ]),
    )
        .prop_map(|(k, a, b, v)| format!("{k}{a}={b}{v}"))
}

fn plain_pair() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "dbname=lake",
        "host=127.0.0.1",
        "port=5432",
        "user=lake_writer",
        "sslmode=require",
        "application_name='srdp app'",
    ])
    .prop_map(str::to_string)
}

/// A key=value connection string with a password somewhere in it.
fn conninfo_with_password() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(plain_pair(), 0..4),
        password_pair(),
        prop::collection::vec(plain_pair(), 0..3),
        space(),
    )
        .prop_map(|(before, pw, after, tail)| {
            let mut parts = before;
            parts.push(pw);
            parts.extend(after);
            format!("{}{tail}", parts.join(" "))
        })
}

/// A URI connection string with a password in the user info or the query.
fn uri_with_password() -> impl Strategy<Value = String> {
    (
        any::<bool>(),
        prop::sample::select(vec!["postgres", "postgresql"]),
    )
        .prop_map(|(in_userinfo, scheme)| {
            if in_userinfo {
                format!("{scheme}://lake:{SECRET}@db.internal:5432/lakecat?sslmode=require")
            } else {
                format!("{scheme}://db.internal/lakecat?sslmode=require&password={SECRET}")
            }
        })
}

/// TOML text around a value: the metadata line of a PostgreSQL catalog.
fn document(metadata: &str) -> String {
    let escaped = metadata
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
        .replace('\r', "\\r")
        .replace('\t', "\\t")
        .replace('\x0b', "\\u000b")
        .replace('\x0c', "\\f");
    format!("[catalogs.pg]\nmetadata = \"postgres:{escaped}\"\ndata_path = \"s3://b/p/\"\n")
}

/// Parses `text` as `/etc/srdp/srdp.toml`; the error as the user would read it.
fn parse(text: &str) -> Result<config::Config, String> {
    config::parse(Path::new("/etc/srdp/srdp.toml"), text).map_err(|e| e.to_string())
}

proptest! {
    #![proptest_config(cases())]

    #[test]
    fn libpq_parser_never_panics(s in ".{0,80}") {
        let _ = libpq::parse(&s);
        let _ = redact(&s);
    }

    #[test]
    fn every_password_form_is_found_and_redacted(conninfo in conninfo_with_password()) {
        let parsed = libpq::parse(&conninfo);
        if let Ok(parsed) = &parsed {
            prop_assert!(!parsed.secret_keys().is_empty(), "{conninfo:?}");
        }
        if let Err(e) = &parsed {
            prop_assert!(!e.to_string().contains(SECRET));
        }
        prop_assert!(!redact(&conninfo).contains(SECRET), "{:?}", redact(&conninfo));
        let message = parse(&document(&conninfo)).err().unwrap_or_default();
        prop_assert!(message.contains("key 'catalogs.pg.metadata'"), "{message}");
        prop_assert!(!message.contains(SECRET), "{message}");
    }

    #[test]
    fn uri_passwords_are_refused_and_redacted(uri in uri_with_password()) {
        prop_assert!(!libpq::parse(&uri).unwrap().secret_keys().is_empty());
        prop_assert!(!redact(&uri).contains(SECRET));
        let message = parse(&document(&uri)).unwrap_err();
        prop_assert!(message.contains("contains a password"), "{message}");
        prop_assert!(!message.contains(SECRET));
    }

    #[test]
    fn config_parser_never_panics(s in "(.|\n){0,200}") {
        let _ = parse(&s);
    }

    #[test]
    fn config_parser_never_panics_on_near_toml(lines in prop::collection::vec(
        prop::sample::select(vec![
            "[catalogs.lake]", "[catalogs.pg]", "[defaults]", "[rules]", "[catalogs.lake.schemas.raw]",
            "metadata = \"sqlite:lake.sqlite\"", "metadata = \"postgres:dbname=x\"",
            "data_path = \"data\"", "data_path = \"s3://b/\"", "writer = \"dlt\"", "layer = \"raw\"",
            "max_attempts = 0", "max_retry_seconds = -1", "single_writer = false", "project = \"\"",
            "metadata_schema = \"x\"", "data_path =", "= 1", "[", "\"", "x.y.z = 1",
        ]),
        0..12,
    )) {
        let _ = parse(&lines.join("\n"));
    }

    /// A file that is not TOML (a `.pgpass`, an `.env`, a key file) never shows its content.
    #[test]
    fn a_non_toml_file_is_never_echoed(
        prefix in prop::sample::select(vec![
            "db.internal:5432:*:lake:", "PGPASSWORD=", "export TOKEN=", "-----BEGIN KEY-----\n",
            "host:port:db:user:", "{\"password\": \"", "'", "secret ", "password = ",
        ]),
        suffix in "[ :;@/\"'\\]\\[a-z]{0,10}",
        before in prop::collection::vec("[#a-z ]{0,10}", 0..3),
    ) {
        let mut lines: Vec<String> = before.into_iter().map(|l| format!("# {l}")).collect();
        lines.push(format!("{prefix}{SECRET}{suffix}"));
        let text = lines.join("\n");
        if let Err(message) = parse(&text) {
            prop_assert!(!message.contains(SECRET), "{text:?} -> {message}");
        }
    }
}
