//! Ownership is looked up as DuckDB resolves schema names: `Raw`, `RAW` and a tenant's
//! `Acme_Raw` belong to the owners of `raw` and `acme_raw`.

use super::config;
use crate::rules::*;

#[test]
fn another_case_of_an_owned_schema_is_that_schema() {
    let c = config("");
    let def = c.catalog("lake").unwrap();
    assert_eq!(
        ownership(def, "RAW"),
        Some((vec!["dlt".to_string()], "raw".to_string()))
    );
    assert_eq!(
        ownership(def, "Curated"),
        Some((vec!["dbt".to_string()], "curated".to_string()))
    );
    assert_eq!(ownership(def, "Scratch"), None);
    assert_eq!(
        check_writer(&c, "lake", "Raw", "io_manager")
            .unwrap_err()
            .to_string(),
        "writer 'io_manager' may not write schema 'Raw' of catalog 'lake': it is owned by 'dlt' \
         (single_writer). 'io_manager' may write: raw_landed, serving. To relax the rule, add \
         the line `single_writer = false` under [rules] in /etc/srdp/srdp.toml"
    );
    let allowed = check_writer(&c, "lake", "RAW", "dlt").unwrap();
    assert_eq!(
        (
            allowed.owner.as_deref(),
            allowed.layer.as_deref(),
            allowed.warning
        ),
        (Some("dlt"), Some("raw"), None)
    );
}

#[test]
fn a_tenant_dataset_in_another_case_keeps_its_owner() {
    let c = config("[catalogs.lake.projects.acme]\n");
    let def = c.catalog("lake").unwrap();
    assert_eq!(
        ownership(def, "ACME_RAW_LANDED"),
        Some((vec!["io_manager".to_string()], "raw".to_string()))
    );
    assert_eq!(
        ownership(def, "Acme_Curated"),
        Some((vec!["dbt".to_string()], "curated".to_string()))
    );
}

#[test]
fn a_relaxed_rule_names_the_owner_of_another_case() {
    let c = config("[rules]\nsingle_writer = false\n");
    let check = check_writer(&c, "lake", "Raw", "io_manager").unwrap();
    assert_eq!(
        check.warning.as_deref(),
        Some(
            "srdp rule single_writer is relaxed by /etc/srdp/srdp.toml:24: writer 'io_manager' \
             writes schema 'Raw' owned by 'dlt'"
        )
    );
}
