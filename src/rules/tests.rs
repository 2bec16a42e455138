use super::*;
use crate::config::parse;
use std::path::Path;

pub(super) const BASE: &str = r#"
[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/lake"
landing_path = "landing"
promote_into = "raw_landed"

[catalogs.lake.schemas.raw]
writer = "dlt"
layer = "raw"

[catalogs.lake.schemas.raw_landed]
writer = "io_manager"
layer = "raw"

[catalogs.lake.schemas.curated]
writer = "dbt"
layer = "curated"

[catalogs.lake.schemas.serving]
writer = "io_manager"
layer = "serving"
"#;

pub(super) fn config(extra: &str) -> Config {
    parse(Path::new("/etc/srdp/srdp.toml"), &format!("{BASE}{extra}")).unwrap()
}

#[test]
fn rules_default_to_on_and_name_the_relaxing_line() {
    let on = states(&config(""));
    assert_eq!(
        on.iter()
            .map(|s| (s.info.name, s.enabled, s.source.as_str()))
            .collect::<Vec<_>>(),
        [
            ("raw_append_only", true, "default"),
            ("raw_validated", true, "default"),
            ("single_writer", true, "default"),
        ]
    );
    let relaxed = states(&config("\n[rules]\nraw_validated = false\n"));
    assert_eq!(
        (relaxed[1].enabled, relaxed[1].source.as_str()),
        (false, "/etc/srdp/srdp.toml:25")
    );
    assert_eq!(
        relaxed_warnings(&config("\n[rules]\nraw_validated = false\n")),
        ["srdp rule raw_validated is relaxed by /etc/srdp/srdp.toml:25: a type mismatch silently \
          adds a variant column (such as `amount__v_text`) instead of failing"]
    );
}

#[test]
fn the_owner_may_write_its_schema() {
    let c = config("");
    assert_eq!(
        check_writer(&c, "lake", "raw", "dlt").unwrap(),
        WriterCheck {
            owner: Some("dlt".into()),
            layer: Some("raw".into()),
            warning: None
        }
    );
}

#[test]
fn another_writer_is_refused_with_owner_allowed_schemas_and_the_relaxing_line() {
    assert_eq!(
        check_writer(&config(""), "lake", "curated", "dlt")
            .unwrap_err()
            .to_string(),
        "writer 'dlt' may not write schema 'curated' of catalog 'lake': it is owned by 'dbt' \
         (single_writer). 'dlt' may write: raw and the landing zone (landing_path). To relax the \
         rule, add the line `single_writer = false` under [rules] in /etc/srdp/srdp.toml"
    );
    assert_eq!(
        check_writer(&config(""), "lake", "scratch", "dbt")
            .unwrap_err()
            .to_string(),
        "writer 'dbt' may not write schema 'scratch' of catalog 'lake': it has no owner in the \
         definition; define [catalogs.lake.schemas.scratch] with writer and layer. 'dbt' may \
         write: curated. To relax the rule, add the line `single_writer = false` under [rules] \
         in /etc/srdp/srdp.toml"
    );
}

#[test]
fn relaxed_single_writer_allows_with_a_warning() {
    let c = config("\n[rules]\nsingle_writer = false\n");
    let check = check_writer(&c, "lake", "curated", "dlt").unwrap();
    assert_eq!(
        check.warning.as_deref(),
        Some(
            "srdp rule single_writer is relaxed by /etc/srdp/srdp.toml:25: writer 'dlt' writes \
             schema 'curated' owned by 'dbt'"
        )
    );
}

#[test]
fn unknown_writer_lists_the_writers() {
    assert_eq!(
        check_writer(&config(""), "lake", "raw", "dlx")
            .unwrap_err()
            .to_string(),
        "unknown writer 'dlx' in catalog 'lake' of /etc/srdp/srdp.toml (writers: dbt, dlt, \
         io_manager); name it as the writer of a schema under [catalogs.lake.schemas.<schema>]"
    );
}

#[test]
fn dlt_destination_for_raw_on_sqlite() {
    let d = dlt_destination(&config(""), "lake", &DltRequest::default()).unwrap();
    assert_eq!(
        d,
        DltDestination {
            catalog: "lake".into(),
            attach_name: "lake".into(),
            catalog_url: Some("sqlite:////etc/srdp/catalog/lake.sqlite".into()),
            metadata_schema: None,
            storage_url: "file:///etc/srdp/data/lake/".into(),
            dataset_name: "raw".into(),
            layer: "raw".into(),
            writer: "dlt".into(),
            owner: Some("dlt".into()),
            write_disposition: Some("append".into()),
            schema_contract: Some(r#"{"data_type": "freeze"}"#.into()),
            data_inlining_row_limit: 1000,
            warnings: vec![],
            destination_type: "ducklake".into(),
            file_format: None,
            layout: None,
            promote_into: None,
        }
    );
}

#[test]
fn relaxed_rules_lift_the_constraint_and_warn() {
    let c = config("\n[rules]\nraw_append_only = false\nraw_validated = false\n");
    let d = dlt_destination(&c, "lake", &DltRequest::default()).unwrap();
    assert_eq!((d.write_disposition, d.schema_contract), (None, None));
    assert_eq!(
        d.warnings,
        [
            "srdp rule raw_append_only is relaxed by /etc/srdp/srdp.toml:25: the audit trail and \
             rebuild from raw are lost for those tables; dropping a table also resets dlt's \
             incremental state",
            "srdp rule raw_validated is relaxed by /etc/srdp/srdp.toml:26: a type mismatch \
             silently adds a variant column (such as `amount__v_text`) instead of failing",
        ]
    );
}

#[test]
fn dlt_into_a_dbt_schema_is_refused() {
    let request = DltRequest {
        schema_name: Some("curated".into()),
        ..Default::default()
    };
    let e = dlt_destination(&config(""), "lake", &request).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("writer 'dlt' may not write schema 'curated' of catalog 'lake'"),
        "{e}"
    );
}

#[test]
fn unknown_layer_lists_the_layers() {
    let request = DltRequest {
        layer: Some("bronze".into()),
        ..Default::default()
    };
    assert_eq!(
        dlt_destination(&config(""), "lake", &request)
            .unwrap_err()
            .to_string(),
        "unknown layer 'bronze' in catalog 'lake' of /etc/srdp/srdp.toml (layers: curated, \
         landing, raw, serving); define a schema with layer = \"bronze\" under \
         [catalogs.lake.schemas.<schema>]"
    );
}

/// BASE without its landing zone: dlt's strict raw schema only.
pub(super) fn strict(extra: &str) -> String {
    let base = BASE
        .replace(
            "landing_path = \"landing\"\npromote_into = \"raw_landed\"\n",
            "",
        )
        .replace(
            "[catalogs.lake.schemas.raw_landed]\nwriter = \"io_manager\"\nlayer = \"raw\"\n",
            "",
        );
    format!("{base}{extra}")
}

#[test]
fn tenant_projects_get_separate_datasets_owned_by_the_layer_owner() {
    let c = parse(
        Path::new("/etc/srdp/srdp.toml"),
        &strict("\n[catalogs.lake.projects.beta]\nraw_dataset = \"beta_ingest\"\n").replace(
            "data_path = \"data/lake\"\n",
            "data_path = \"data/lake\"\nproject = \"acme\"\n",
        ),
    )
    .unwrap();
    let acme = dlt_destination(&c, "lake", &DltRequest::default()).unwrap();
    let beta = dlt_destination(
        &c,
        "lake",
        &DltRequest {
            project: Some("beta".into()),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        (acme.dataset_name.as_str(), beta.dataset_name.as_str()),
        ("acme_raw", "beta_ingest")
    );
    assert_eq!(beta.owner.as_deref(), Some("dlt"));
    // A landing folder is no schema: nobody owns a schema by that name.
    assert!(check_writer(&c, "lake", "acme_landing", "dlt")
        .unwrap_err()
        .to_string()
        .starts_with(
            "writer 'dlt' may not write schema 'acme_landing' of catalog 'lake': it has no owner"
        ));
    let e = dlt_destination(
        &c,
        "lake",
        &DltRequest {
            project: Some("gamma".into()),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "unknown project 'gamma' in catalog 'lake' of /etc/srdp/srdp.toml (projects: acme, \
         beta); set project = \"gamma\" or add [catalogs.lake.projects.gamma]"
    );
}

#[test]
fn postgres_urls_never_carry_a_password() {
    assert_eq!(
        postgres_url("dbname=lake host=127.0.0.1 port=5432 user=lake_writer sslmode=require"),
        "postgres://lake_writer@127.0.0.1:5432/lake?sslmode=require"
    );
    assert_eq!(
        postgres_url("dbname=lake password=x"),
        "postgres://localhost/lake"
    );
}

#[test]
fn storage_urls_and_table_names() {
    assert_eq!(storage_url("/srv/data/"), "file:///srv/data/");
    assert_eq!(storage_url("s3://b/p/"), "s3://b/p/");
    assert_eq!(table_name("lake", "raw", "events"), "lake.raw.events");
}

#[test]
fn dlt_cannot_follow_a_duckdb_file_catalog_outside_main() {
    let c = parse(
        Path::new("/etc/srdp/srdp.toml"),
        "[catalogs.duck]\nmetadata = \"duck.ducklake\"\nmetadata_schema = \"meta\"\ndata_path = \"d\"\n\
         [catalogs.duck.schemas.raw]\nwriter = \"dlt\"\nlayer = \"raw\"\n",
    )
    .unwrap();
    let e = dlt_destination(&c, "duck", &DltRequest::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "catalog 'duck' keeps its metadata in schema 'meta' of a DuckDB file, and dlt attaches \
         DuckDB-file catalogs without METADATA_SCHEMA, so it would load into a second lake in \
         schema 'main'. Use metadata_schema = \"main\" (the default) for catalogs dlt loads, or a \
         SQLite or PostgreSQL catalog"
    );
}

mod case_folded;
mod landing;
mod patterns;
