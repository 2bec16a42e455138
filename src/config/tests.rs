use super::*;
use crate::error::Result;
use std::path::{Path, PathBuf};

fn parse_at(text: &str) -> Result<Config> {
    parse(Path::new("/etc/srdp/srdp.toml"), text)
}

fn message(text: &str) -> String {
    parse_at(text).unwrap_err().to_string()
}

const MINIMAL: &str = r#"
[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/lake"
"#;

#[test]
fn minimal_catalog_gets_defaults_and_absolute_paths() {
    let config = parse_at(MINIMAL).unwrap();
    let lake = config.catalog("lake").unwrap();
    assert_eq!(
        lake.backend,
        Backend::Sqlite {
            path: PathBuf::from("/etc/srdp/catalog/lake.sqlite")
        }
    );
    assert_eq!(lake.data_path, "/etc/srdp/data/lake/");
    assert_eq!(lake.metadata_schema, "main");
    assert_eq!(lake.tunables, Tunables::default());
    assert_eq!(lake.tunables.data_inlining_row_limit, 1000);
    assert_eq!(lake.tunables.pressure_warning_rows, 100_000);
    assert_eq!(lake.tunables.max_attempts, 1000);
    assert_eq!(lake.tunables.max_retry_seconds, 300);
    assert_eq!(lake.tunables.retry_backoff_ms, 100);
    assert!(config.rules.single_writer.enabled && config.rules.raw_validated.enabled);
    assert_eq!(
        config.rules.raw_append_only,
        Rule {
            enabled: true,
            line: None
        }
    );
}

#[test]
fn backends_and_metadata_schema_defaults() {
    let config = parse_at(
        r#"
[catalogs.file]
metadata = "../meta/lake.ducklake"
metadata_schema = "meta"
data_path = "s3://bucket/prefix"

[catalogs.pg]
metadata = "postgres:dbname=lake host=127.0.0.1 port=5432 user=lake_writer"
data_path = "./pgdata/"
"#,
    )
    .unwrap();
    let file = config.catalog("file").unwrap();
    assert_eq!(
        file.backend,
        Backend::DuckDbFile {
            path: PathBuf::from("/etc/meta/lake.ducklake")
        }
    );
    assert_eq!(file.metadata_schema, "meta");
    assert_eq!(file.data_path, "s3://bucket/prefix/");
    assert_eq!(file.local_data_path(), None);
    let pg = config.catalog("pg").unwrap();
    assert_eq!(pg.backend.name(), "postgres");
    assert_eq!(pg.metadata_schema, "public");
    assert_eq!(pg.data_path, "/etc/srdp/pgdata/");
    assert_eq!(
        pg.backend.display(),
        "postgres:dbname=lake host=127.0.0.1 port=5432 user=lake_writer"
    );
}

#[test]
fn catalog_overrides_defaults() {
    let config = parse_at(
        r#"
[defaults]
data_inlining_row_limit = 10
max_attempts = 3

[catalogs.lake]
metadata = "lake.ducklake"
data_path = "data"
max_attempts = 5
pressure_warning_rows = 7
"#,
    )
    .unwrap();
    let t = config.catalog("lake").unwrap().tunables;
    assert_eq!(
        t,
        Tunables {
            data_inlining_row_limit: 10,
            pressure_warning_rows: 7,
            max_attempts: 5,
            max_retry_seconds: 300,
            retry_backoff_ms: 100
        }
    );
}

#[test]
fn relaxed_rule_remembers_its_line() {
    let config = parse_at("[rules]\nraw_validated = true\nsingle_writer = false\n").unwrap();
    assert_eq!(
        config.rules.single_writer,
        Rule {
            enabled: false,
            line: Some(3)
        }
    );
    assert_eq!(
        config.rules.raw_validated,
        Rule {
            enabled: true,
            line: Some(2)
        }
    );
}

#[test]
fn unknown_catalog_lists_known_ones() {
    let config = parse_at(MINIMAL).unwrap();
    assert_eq!(
        config.catalog("lakee").unwrap_err().to_string(),
        "unknown catalog 'lakee' in /etc/srdp/srdp.toml (defined: lake)"
    );
}

#[test]
fn malformed_toml_names_the_line() {
    assert_eq!(
        message("[catalogs.lake]\nmetadata = \"x\"\ndata_path = \n"),
        "/etc/srdp/srdp.toml:3: key 'catalogs.lake.data_path': column 13: string values must be quoted, expected literal string"
    );
}

#[test]
fn a_file_that_is_not_toml_is_never_echoed() {
    for (text, expected) in [
        (
            "db.internal:5432:*:lake_writer:Secret1\n",
            "/etc/srdp/srdp.toml:1: column 39: key with no value",
        ),
        (
            "password=Secret1\n",
            "/etc/srdp/srdp.toml:1: key 'password': column 10: ",
        ),
        ("[Secret1 x\n", "/etc/srdp/srdp.toml:1: column "),
        ("# x\n\"Secret1\n", "/etc/srdp/srdp.toml:2: column "),
    ] {
        let m = message(text);
        assert!(m.starts_with(expected), "{m}");
        assert!(!m.contains("Secret1"), "{m}");
    }
}

#[test]
fn a_password_in_any_libpq_form_is_refused() {
    for conninfo in [
        "dbname=x host=127.0.0.1 port=1 password\\t=Secret1",
        "dbname=x host=127.0.0.1 port=1 password\\n=Secret1",
        "dbname=x password = 'Sec ret1'",
        "dbname=x sslpassword=Secret1",
        "postgresql://u:Secret1@h/x",
        "postgres://h/x?password=Secret1",
    ] {
        let m = message(&format!(
            "[catalogs.pg]\nmetadata = \"postgres:{conninfo}\"\ndata_path = \"s3://b/\"\n"
        ));
        assert_eq!(
            m,
            "/etc/srdp/srdp.toml:2: key 'catalogs.pg.metadata': contains a password; secrets never live in srdp.toml: put the credentials in a DuckDB secret and name it in writer_secret / reader_secret",
            "{conninfo}"
        );
    }
    assert_eq!(
        message("[catalogs.pg]\nmetadata = \"postgres:dbname=x Secret1\"\ndata_path = \"s3://b/\"\n"),
        "/etc/srdp/srdp.toml:2: key 'catalogs.pg.metadata': is not a libpq connection string after \"postgres:\": a key at character 10 has no \"=\" after it (libpq expects key=value pairs separated by spaces)"
    );
}

#[test]
fn unknown_key_names_the_key_and_line() {
    assert_eq!(
        message("[catalogs.lake]\nmetadata = \"x\"\ndata_path = \"d\"\ndata_pth = \"d\"\n"),
        "/etc/srdp/srdp.toml:4: key 'catalogs.lake.data_pth': unknown field `data_pth`, expected one of `metadata`, `metadata_schema`, `data_path`, `landing_path`, `promote_into`, `project`, `writer_secret`, `reader_secret`, `data_inlining_row_limit`, `pressure_warning_rows`, `max_attempts`, `max_retry_seconds`, `retry_backoff_ms`, `schemas`, `projects`"
    );
    assert_eq!(
        message("[rules]\nno_deletes = false\n"),
        "/etc/srdp/srdp.toml:2: key 'rules.no_deletes': unknown field `no_deletes`, expected one of `raw_append_only`, `raw_validated`, `single_writer`"
    );
}

#[test]
fn wrong_type_names_the_key_and_line() {
    assert_eq!(
        message("[defaults]\nmax_attempts = \"eight\"\n"),
        "/etc/srdp/srdp.toml:2: key 'defaults.max_attempts': invalid type: string \"eight\", expected i64"
    );
}

#[test]
fn missing_data_path_is_an_error() {
    assert_eq!(
        message("[catalogs.lake]\nmetadata = \"sqlite:x.sqlite\"\n"),
        "/etc/srdp/srdp.toml:1: key 'catalogs.lake': missing field `data_path`"
    );
}

#[test]
fn out_of_range_values_are_errors_not_defaults() {
    assert_eq!(
        message("[catalogs.lake]\nmetadata = \"x\"\ndata_path = \"d\"\nmax_attempts = 0\n"),
        "/etc/srdp/srdp.toml:4: key 'catalogs.lake.max_attempts': must be between 1 and 100000, got 0"
    );
    assert_eq!(
        message("[defaults]\ndata_inlining_row_limit = -1\n"),
        "/etc/srdp/srdp.toml:2: key 'defaults.data_inlining_row_limit': must be between 0 and 1000000000, got -1"
    );
}

#[test]
fn impossible_combinations_are_errors() {
    assert_eq!(
        message("[catalogs.lake]\nmetadata = \"sqlite:x.sqlite\"\nmetadata_schema = \"meta\"\ndata_path = \"d\"\n"),
        "/etc/srdp/srdp.toml:3: key 'catalogs.lake.metadata_schema': SQLite catalogs only have the schema \"main\", got \"meta\"; remove the key or set it to \"main\""
    );
    let msg = message(
        "[catalogs.pg]\nmetadata = \"postgres:host=h password=hunter2\"\ndata_path = \"d\"\n",
    );
    assert_eq!(
        msg,
        "/etc/srdp/srdp.toml:2: key 'catalogs.pg.metadata': contains a password; secrets never live in srdp.toml: put the credentials in a DuckDB secret and name it in writer_secret / reader_secret"
    );
    assert!(!msg.contains("hunter2"));
    assert_eq!(
        message("[catalogs.lake]\nmetadata = \"\"\ndata_path = \"d\"\n"),
        "/etc/srdp/srdp.toml:2: key 'catalogs.lake.metadata': must not be empty; give a DuckDB file path, \"sqlite:<path>\" or \"postgres:<libpq key=value>\""
    );
    assert_eq!(
        message("[catalogs.lake]\nmetadata = \"x\"\ndata_path = \"d\"\nwriter_secret = \" \"\n"),
        "/etc/srdp/srdp.toml:4: key 'catalogs.lake.writer_secret': must not be empty; remove the key instead"
    );
}

#[test]
fn schemas_are_parsed() {
    let config = parse_at(
        "[catalogs.lake]\nmetadata = \"x\"\ndata_path = \"d\"\n[catalogs.lake.schemas.raw]\nwriter = \"dlt\"\nlayer = \"raw\"\n",
    )
    .unwrap();
    assert_eq!(
        config.catalog("lake").unwrap().schemas["raw"],
        SchemaDef {
            writers: vec!["dlt".into()],
            layer: "raw".into()
        }
    );
}

const OWNED: &str = "[catalogs.lake]\nmetadata = \"x\"\ndata_path = \"d\"\n";

#[test]
fn a_schema_with_two_writers_is_an_error_while_single_writer_is_on() {
    let text = format!(
        "{OWNED}[catalogs.lake.schemas.raw]\nwriter = [\"dlt\", \"dbt\"]\nlayer = \"raw\"\n"
    );
    assert_eq!(
        message(&text),
        "/etc/srdp/srdp.toml:5: key 'catalogs.lake.schemas.raw.writer': names 2 writers (dlt, dbt); \
         with the single_writer rule on, a schema has exactly one writer. Keep one, or relax the \
         rule with the line `single_writer = false` under [rules]"
    );
    let relaxed = parse_at(&format!("{text}[rules]\nsingle_writer = false\n")).unwrap();
    assert_eq!(
        relaxed.catalog("lake").unwrap().schemas["raw"].writers,
        vec!["dlt".to_string(), "dbt".to_string()]
    );
}

#[test]
fn dlt_may_own_only_raw_schemas_while_single_writer_is_on() {
    let text =
        format!("{OWNED}[catalogs.lake.schemas.curated]\nwriter = \"dlt\"\nlayer = \"curated\"\n");
    assert_eq!(
        message(&text),
        "/etc/srdp/srdp.toml:5: key 'catalogs.lake.schemas.curated.writer': dlt may only own \
         raw schemas while the single_writer rule is on, and schema 'curated' has layer \
         'curated'. Give it another writer, load with dlt into a raw schema or the landing zone \
         (landing_path), or relax the rule with the line `single_writer = false` under [rules]"
    );
    assert!(parse_at(&format!("{text}[rules]\nsingle_writer = false\n")).is_ok());
    let ok = format!("{OWNED}[catalogs.lake.schemas.s]\nwriter = \"dlt\"\nlayer = \"raw\"\n");
    assert!(parse_at(&ok).is_ok());
}

#[test]
fn empty_writer_list_is_an_error() {
    let text = format!("{OWNED}[catalogs.lake.schemas.raw]\nwriter = []\nlayer = \"raw\"\n");
    assert_eq!(
        message(&text),
        "/etc/srdp/srdp.toml:5: key 'catalogs.lake.schemas.raw.writer': must name a writer (such as \"dlt\", \"dbt\" or \"io_manager\")"
    );
}

#[test]
fn tenant_projects_get_their_own_datasets() {
    let config = parse_at(&format!(
        "{OWNED}project = \"acme\"\n[catalogs.lake.projects.beta]\nraw_dataset = \"beta_ingest\"\n"
    ))
    .unwrap();
    let lake = config.catalog("lake").unwrap();
    assert_eq!(lake.projects.keys().collect::<Vec<_>>(), ["acme", "beta"]);
    assert_eq!(lake.project_dataset("acme", "raw"), "acme_raw");
    assert_eq!(lake.project_dataset("acme", "landing"), "acme_landing");
    assert_eq!(lake.project_dataset("beta", "raw"), "beta_ingest");
    assert_eq!(lake.project_dataset("beta", "landing"), "beta_landing");
}

#[test]
fn a_raw_dataset_may_share_its_name_with_another_projects_landing_folder() {
    // Raw datasets are schemas and landing datasets folders: different name spaces.
    let config = parse_at(&format!(
        "{OWNED}project = \"acme\"\n[catalogs.lake.projects.beta]\nraw_dataset = \"acme_landing\"\n"
    ))
    .unwrap();
    let lake = config.catalog("lake").unwrap();
    assert_eq!(lake.project_dataset("beta", "raw"), "acme_landing");
    assert_eq!(lake.project_dataset("acme", "landing"), "acme_landing");
}

#[test]
fn colliding_project_landing_folders_are_an_error() {
    let text = format!(
        "{OWNED}project = \"acme\"\n[catalogs.lake.projects.beta]\nlanding_dataset = \"acme_landing\"\n"
    );
    assert_eq!(
        message(&text),
        "/etc/srdp/srdp.toml:5: key 'catalogs.lake.projects.beta': projects 'acme' and 'beta' would both load into dataset 'acme_landing'; give one of them another landing_dataset"
    );
}

#[test]
fn colliding_project_datasets_are_an_error() {
    let text = format!(
        "{OWNED}project = \"acme\"\n[catalogs.lake.projects.beta]\nraw_dataset = \"acme_raw\"\n"
    );
    assert_eq!(
        message(&text),
        "/etc/srdp/srdp.toml:5: key 'catalogs.lake.projects.beta': projects 'acme' and 'beta' would both load into dataset 'acme_raw'; give one of them another raw_dataset"
    );
}

mod case_folded;
mod landing;
mod landing_spellings;

#[test]
fn resolve_normalises_lexically() {
    assert_eq!(
        resolve(Path::new("/a/b"), "../c/./d"),
        PathBuf::from("/a/c/d")
    );
    assert_eq!(
        resolve(Path::new("/a/b"), "/abs/x"),
        PathBuf::from("/abs/x")
    );
}

#[test]
fn urls_are_recognised() {
    assert!(is_url("s3://b/p"));
    assert!(is_url("gcs://b"));
    assert!(!is_url("/local/path"));
    assert!(!is_url("data://"[4..].as_ref()));
}

mod discovery {
    use super::super::*;
    use std::path::PathBuf;
    use std::sync::Arc;

    fn tmp(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("srdp-config-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn first_source_wins_and_relative_paths_use_cwd() {
        let dir = tmp("order");
        for f in ["p.toml", "s.toml", "e.toml", "srdp.toml"] {
            std::fs::write(dir.join(f), "").unwrap();
        }
        let all = Sources {
            parameter: Some("p.toml".into()),
            setting: Some("s.toml".into()),
            env: Some("e.toml".into()),
            cwd: dir.clone(),
        };
        assert_eq!(locate(&all).unwrap(), (dir.join("p.toml"), "config :="));
        let no_param = Sources {
            parameter: None,
            ..all.clone()
        };
        assert_eq!(
            locate(&no_param).unwrap(),
            (dir.join("s.toml"), "SET srdp_config")
        );
        let empty_setting = Sources {
            setting: Some(String::new()),
            ..no_param.clone()
        };
        assert_eq!(
            locate(&empty_setting).unwrap(),
            (dir.join("e.toml"), "$SRDP_CONFIG")
        );
        let only_cwd = Sources {
            cwd: dir.clone(),
            ..Default::default()
        };
        assert_eq!(
            locate(&only_cwd).unwrap(),
            (dir.join("srdp.toml"), "./srdp.toml")
        );
    }

    #[test]
    fn named_missing_file_is_an_error_not_a_fallthrough() {
        let dir = tmp("missing");
        std::fs::write(dir.join("srdp.toml"), "").unwrap();
        let s = Sources {
            env: Some("nope.toml".into()),
            cwd: dir.clone(),
            ..Default::default()
        };
        assert_eq!(
            locate(&s).unwrap_err().to_string(),
            format!(
                "cannot read {}/nope.toml (from $SRDP_CONFIG): no such file",
                dir.display()
            )
        );
    }

    #[test]
    fn nothing_found_says_where_it_looked() {
        let dir = tmp("none");
        let s = Sources {
            cwd: dir.clone(),
            ..Default::default()
        };
        assert_eq!(
            locate(&s).unwrap_err().to_string(),
            format!(
                "no srdp.toml found; looked at config := (not given), SET srdp_config (not set), $SRDP_CONFIG (not set), {}/srdp.toml (no such file). Pass config := '/path/to/srdp.toml', SET srdp_config = '/path/to/srdp.toml', or set the environment variable SRDP_CONFIG",
                dir.display()
            )
        );
    }

    #[test]
    fn empty_parameter_is_an_error() {
        let s = Sources {
            parameter: Some(" ".into()),
            ..Default::default()
        };
        assert_eq!(
            locate(&s).unwrap_err().to_string(),
            "config := must not be empty; pass the path of an srdp.toml or leave the parameter out"
        );
    }

    #[test]
    fn load_caches_until_the_file_changes() {
        let dir = tmp("cache");
        let path = dir.join("srdp.toml");
        std::fs::write(&path, "[catalogs.a]\nmetadata = \"a\"\ndata_path = \"d\"\n").unwrap();
        let first = load(&path, "test").unwrap();
        let again = load(&path, "test").unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        std::fs::write(&path, "[catalogs.b]\nmetadata = \"b\"\ndata_path = \"d\"\n[catalogs.c]\nmetadata = \"c\"\ndata_path = \"d\"\n").unwrap();
        let changed = load(&path, "test").unwrap();
        assert_eq!(changed.known_catalogs(), "b, c");
    }
}

#[test]
fn unknown_writers_and_layers_are_refused_with_the_known_names_and_the_closest() {
    let schema = |writer: &str, layer: &str| {
        format!("{MINIMAL}\n[catalogs.lake.schemas.raw]\nwriter = {writer}\nlayer = \"{layer}\"\n")
    };
    assert_eq!(
        message(&schema("\"dtl\"", "raw")),
        "/etc/srdp/srdp.toml:7: key 'catalogs.lake.schemas.raw.writer': unknown writer \"dtl\" \
         (did you mean \"dlt\"?); known writers: dbt, dlt, io_manager. A writer of your own is \
         declared under [custom] as writers = [\"dtl\"]"
    );
    assert_eq!(
        message(&schema("\"dbt\"", "curatd")),
        "/etc/srdp/srdp.toml:8: key 'catalogs.lake.schemas.raw.layer': unknown layer \"curatd\" \
         (did you mean \"curated\"?); known layers: curated, intermediate, marts, raw, serving, \
         staging. A layer of your own is declared under [custom] as layers = [\"curatd\"]"
    );
    assert_eq!(
        message(&schema("[\"dlt\", \"airbyte\"]", "raw")),
        "/etc/srdp/srdp.toml:7: key 'catalogs.lake.schemas.raw.writer': unknown writer \
         \"airbyte\"; known writers: dbt, dlt, io_manager. A writer of your own is declared under \
         [custom] as writers = [\"airbyte\"]"
    );
    // Declared names are known, and a typo of one is caught too.
    let custom = "[custom]\nwriters = [\"reporting\"]\nlayers = [\"bronze\"]\n";
    let c = parse_at(&format!("{custom}{}", schema("\"reporting\"", "bronze"))).unwrap();
    assert_eq!(
        c.catalog("lake").unwrap().schemas["raw"].writers,
        ["reporting"]
    );
    assert_eq!(
        message(&format!("{custom}{}", schema("\"reportng\"", "bronze"))),
        "/etc/srdp/srdp.toml:10: key 'catalogs.lake.schemas.raw.writer': unknown writer \
         \"reportng\" (did you mean \"reporting\"?); known writers: dbt, dlt, io_manager, \
         reporting. A writer of your own is declared under [custom] as writers = [\"reportng\"]"
    );
    assert_eq!(
        message("[custom]\nlayers = [\"landing\"]\n"),
        "/etc/srdp/srdp.toml:2: key 'custom.layers': the landing zone is a folder outside \
         DuckLake (landing_path), not a layer of schemas; remove \"landing\""
    );
}

#[test]
fn an_empty_schema_name_is_refused_with_its_line() {
    for name in ["", " "] {
        assert_eq!(
            message(&format!(
                "{MINIMAL}\n[catalogs.lake.schemas.\"{name}\"]\nwriter = \"dbt\"\nlayer = \"curated\"\n"
            )),
            format!(
                "/etc/srdp/srdp.toml:6: key 'catalogs.lake.schemas.\"{name}\"': a schema name must \
                 not be empty; name the schema, as in [catalogs.lake.schemas.raw]"
            )
        );
    }
}

#[test]
fn a_typo_two_edits_away_still_gets_its_name() {
    let schema = |layer: &str| {
        format!("{MINIMAL}\n[catalogs.lake.schemas.marts]\nwriter = \"dbt\"\nlayer = \"{layer}\"\n")
    };
    assert_eq!(
        message(&schema("curtd")),
        "/etc/srdp/srdp.toml:8: key 'catalogs.lake.schemas.marts.layer': unknown layer \"curtd\" \
         (did you mean \"curated\"?); known layers: curated, intermediate, marts, raw, serving, \
         staging. A layer of your own is declared under [custom] as layers = [\"curtd\"]"
    );
}
