//! dlt into the landing zone: dlt's filesystem destination, owned by dlt, outside the raw rules.

use super::{config, strict, BASE};
use crate::config::parse;
use crate::rules::*;
use std::path::Path;

fn landing() -> DltRequest {
    DltRequest {
        layer: Some("landing".into()),
        ..Default::default()
    }
}

fn error(c: &crate::config::Config, request: &DltRequest) -> String {
    dlt_destination(c, "lake", request).unwrap_err().to_string()
}

#[test]
fn the_landing_row_is_a_filesystem_destination_outside_the_raw_rules() {
    let d = dlt_destination(&config(""), "lake", &landing()).unwrap();
    assert_eq!(
        d,
        DltDestination {
            catalog: "lake".into(),
            attach_name: "lake".into(),
            catalog_url: None,
            metadata_schema: None,
            storage_url: "file:///etc/srdp/landing/".into(),
            dataset_name: "landing".into(),
            layer: "landing".into(),
            writer: "dlt".into(),
            owner: Some("dlt".into()),
            write_disposition: None,
            schema_contract: None,
            data_inlining_row_limit: 1000,
            warnings: vec![],
            destination_type: "filesystem".into(),
            file_format: Some("parquet".into()),
            layout: Some("{table_name}/{load_id}.{file_id}.{ext}".into()),
            promote_into: Some("raw_landed".into()),
        }
    );
}

#[test]
fn relaxed_raw_rules_do_not_warn_in_the_landing_zone() {
    let c = config("\n[rules]\nraw_append_only = false\nraw_validated = false\n");
    let d = dlt_destination(&c, "lake", &landing()).unwrap();
    assert_eq!(d.warnings, Vec::<String>::new());
}

#[test]
fn tenant_projects_land_in_their_own_folder_and_promote_into_their_promote_into_dataset() {
    let c = parse(
        Path::new("/etc/srdp/srdp.toml"),
        "[catalogs.lake]\nmetadata = \"postgres:dbname=lake host=h\"\ndata_path = \"s3://b/lake\"\n\
         landing_path = \"s3://b/landing\"\nproject = \"acme\"\ndata_inlining_row_limit = 7\n\
         [catalogs.lake.schemas.raw]\nwriter = \"io_manager\"\nlayer = \"raw\"\n\
         [catalogs.lake.projects.beta]\nraw_dataset = \"beta_ingest\"\nlanding_dataset = \"beta_inbox\"\n",
    )
    .unwrap();
    let acme = dlt_destination(&c, "lake", &landing()).unwrap();
    assert_eq!(
        (
            acme.storage_url.as_str(),
            acme.dataset_name.as_str(),
            acme.promote_into.as_deref(),
            acme.catalog_url.as_deref(),
            acme.metadata_schema.as_deref(),
            acme.data_inlining_row_limit,
        ),
        (
            "s3://b/landing/",
            "acme_landing",
            Some("acme_raw"),
            None,
            None,
            7
        )
    );
    let beta = dlt_destination(
        &c,
        "lake",
        &DltRequest {
            project: Some("beta".into()),
            ..landing()
        },
    )
    .unwrap();
    // The dataset named after the promote_into schema, which no project renames.
    assert_eq!(
        (beta.dataset_name.as_str(), beta.promote_into.as_deref()),
        ("beta_inbox", Some("beta_raw"))
    );
}

/// BASE (raw owned by dlt, raw_landed by the IO manager and promote_into) as tenant acme's.
fn tenant() -> crate::config::Config {
    parse(
        Path::new("/etc/srdp/srdp.toml"),
        &BASE.replace(
            "data_path = \"data/lake\"\n",
            "data_path = \"data/lake\"\nproject = \"acme\"\n",
        ),
    )
    .unwrap()
}

#[test]
fn a_tenant_promotes_into_its_dataset_of_the_promote_into_schema_never_dlts() {
    let c = tenant();
    let d = dlt_destination(&c, "lake", &landing()).unwrap();
    assert_eq!(
        (d.dataset_name.as_str(), d.promote_into.as_deref()),
        ("acme_landing", Some("acme_raw_landed"))
    );
    let def = c.catalog("lake").unwrap();
    // Each tenant dataset named after a schema has that schema's writer alone, though both
    // schemas are raw.
    assert_eq!(
        ownership(def, "acme_raw"),
        Some((vec!["dlt".to_string()], "raw".to_string()))
    );
    assert_eq!(
        ownership(def, "acme_raw_landed"),
        Some((vec!["io_manager".to_string()], "raw".to_string()))
    );
    assert_eq!(ownership(def, "acme_curated_landed"), None);
}

#[test]
fn in_a_tenant_the_io_manager_writes_the_promoted_dataset_and_dlt_its_raw_dataset() {
    let c = tenant();
    assert_eq!(
        check_writer(&c, "lake", "acme_raw_landed", "io_manager").unwrap(),
        WriterCheck {
            owner: Some("io_manager".into()),
            layer: Some("raw".into()),
            warning: None
        }
    );
    assert_eq!(
        check_writer(&c, "lake", "acme_raw", "io_manager")
            .unwrap_err()
            .to_string(),
        "writer 'io_manager' may not write schema 'acme_raw' of catalog 'lake': it is owned by \
         'dlt' (single_writer). 'io_manager' may write: acme_raw_landed, acme_serving, \
         raw_landed, serving. To relax the rule, add the line `single_writer = false` under \
         [rules] in /etc/srdp/srdp.toml"
    );
    assert_eq!(
        check_writer(&c, "lake", "acme_raw_landed", "dlt")
            .unwrap_err()
            .to_string(),
        "writer 'dlt' may not write schema 'acme_raw_landed' of catalog 'lake': it is owned by \
         'io_manager' (single_writer). 'dlt' may write: acme_raw, raw and the landing zone \
         (landing_path). To relax the rule, add the line `single_writer = false` under [rules] \
         in /etc/srdp/srdp.toml"
    );
    let d = dlt_destination(&c, "lake", &DltRequest::default()).unwrap();
    assert_eq!(
        (
            d.dataset_name.as_str(),
            d.owner.as_deref(),
            d.layer.as_str(),
            d.destination_type.as_str()
        ),
        ("acme_raw", Some("dlt"), "raw", "ducklake")
    );
}

#[test]
fn a_tenant_dataset_of_a_layer_without_a_schema_of_its_name_keeps_the_layers_writers() {
    // Neither raw schema is named after the layer: acme_raw is the layer's dataset, written by
    // both, and each schema's own tenant dataset by its writer alone.
    let c = parse(
        Path::new("/etc/srdp/srdp.toml"),
        &BASE
            .replace(
                "data_path = \"data/lake\"\n",
                "data_path = \"data/lake\"\nproject = \"acme\"\n",
            )
            .replace(
                "[catalogs.lake.schemas.raw]\n",
                "[catalogs.lake.schemas.raw_strict]\n",
            ),
    )
    .unwrap();
    let def = c.catalog("lake").unwrap();
    assert_eq!(
        ownership(def, "acme_raw"),
        Some((
            vec!["dlt".to_string(), "io_manager".to_string()],
            "raw".to_string()
        ))
    );
    assert_eq!(
        ownership(def, "acme_raw_strict"),
        Some((vec!["dlt".to_string()], "raw".to_string()))
    );
    assert_eq!(
        check_writer(&c, "lake", "curated", "io_manager")
            .unwrap_err()
            .to_string(),
        "writer 'io_manager' may not write schema 'curated' of catalog 'lake': it is owned by \
         'dbt' (single_writer). 'io_manager' may write: acme_raw, acme_raw_landed, acme_serving, \
         raw_landed, serving. To relax the rule, add the line `single_writer = false` under \
         [rules] in /etc/srdp/srdp.toml"
    );
}

#[test]
fn landing_without_a_landing_path_is_an_error() {
    let c = parse(Path::new("/etc/srdp/srdp.toml"), &strict("")).unwrap();
    assert_eq!(
        error(&c, &landing()),
        "catalog 'lake' has no landing zone in /etc/srdp/srdp.toml; set landing_path = \
         \"landing/\" under [catalogs.lake] (a local folder or s3:// prefix outside the data path)"
    );
    // Nor is landing listed among the layers a load may name.
    let bronze = DltRequest {
        layer: Some("bronze".into()),
        ..Default::default()
    };
    assert_eq!(
        error(&c, &bronze),
        "unknown layer 'bronze' in catalog 'lake' of /etc/srdp/srdp.toml (layers: curated, raw, \
         serving); define a schema with layer = \"bronze\" under [catalogs.lake.schemas.<schema>]"
    );
}

#[test]
fn landing_with_a_schema_name_is_an_error() {
    let request = DltRequest {
        schema_name: Some("raw".into()),
        ..landing()
    };
    assert_eq!(
        error(&config(""), &request),
        "the landing zone of catalog 'lake' is a folder outside DuckLake, not a schema; leave \
         out schema_name := 'raw' with layer := 'landing'"
    );
}

#[test]
fn another_writer_into_the_landing_zone_is_refused_while_single_writer_is_on() {
    let request = DltRequest {
        writer: Some("dbt".into()),
        ..landing()
    };
    assert_eq!(
        error(&config(""), &request),
        "writer 'dbt' may not write the landing zone of catalog 'lake' (/etc/srdp/landing/): it \
         is owned by 'dlt' (single_writer). 'dbt' may write: curated. To relax the rule, add the \
         line `single_writer = false` under [rules] in /etc/srdp/srdp.toml"
    );
    let relaxed = config("\n[rules]\nsingle_writer = false\n");
    let d = dlt_destination(&relaxed, "lake", &request).unwrap();
    assert_eq!(
        (d.writer.as_str(), d.owner.as_deref(), d.warnings),
        (
            "dbt",
            Some("dlt"),
            vec![
                "srdp rule single_writer is relaxed by /etc/srdp/srdp.toml:25: writer 'dbt' \
                  writes the landing zone of catalog 'lake' (/etc/srdp/landing/) owned by 'dlt'"
                    .to_string()
            ]
        )
    );
    let unknown = DltRequest {
        writer: Some("airbyte".into()),
        ..landing()
    };
    assert_eq!(
        error(&config(""), &unknown),
        "unknown writer 'airbyte' in catalog 'lake' of /etc/srdp/srdp.toml (writers: dbt, dlt, \
         io_manager); the landing zone is written by 'dlt'"
    );
}

#[test]
fn dlt_is_a_writer_of_a_catalog_whose_only_dlt_target_is_the_landing_zone() {
    let c = parse(
        Path::new("/etc/srdp/srdp.toml"),
        &BASE.replace(
            "writer = \"dlt\"\nlayer = \"raw\"",
            "writer = \"dbt\"\nlayer = \"raw\"",
        ),
    )
    .unwrap();
    assert_eq!(
        check_writer(&c, "lake", "raw", "dlt")
            .unwrap_err()
            .to_string(),
        "writer 'dlt' may not write schema 'raw' of catalog 'lake': it is owned by 'dbt' \
         (single_writer). 'dlt' may write: the landing zone (landing_path). To relax the rule, \
         add the line `single_writer = false` under [rules] in /etc/srdp/srdp.toml"
    );
    assert_eq!(
        dlt_destination(&c, "lake", &landing())
            .unwrap()
            .owner
            .as_deref(),
        Some("dlt")
    );
}
