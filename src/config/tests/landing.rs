//! `landing_path` and `promote_into`: normalised like `data_path`, apart from every data path,
//! promoting into a raw schema the IO manager owns; no schema has layer `landing`.

use super::{message, parse_at};

/// A catalog with a promotion target, `landing_path` on line 4 and the schema from line 5.
fn lake(landing: &str) -> String {
    format!(
        "[catalogs.lake]\nmetadata = \"x\"\ndata_path = \"data/lake\"\nlanding_path = \"{landing}\"\n\
         [catalogs.lake.schemas.raw]\nwriter = \"io_manager\"\nlayer = \"raw\"\n"
    )
}

#[test]
fn landing_path_is_normalised_like_data_path_and_promote_into_defaults_to_raw() {
    let config = parse_at(&lake("./data/../landing")).unwrap();
    let def = config.catalog("lake").unwrap();
    assert_eq!(def.landing_path.as_deref(), Some("/etc/srdp/landing/"));
    assert_eq!(def.promote_into.as_deref(), Some("raw"));
    let config = parse_at(&lake("s3://bucket/landing")).unwrap();
    let def = config.catalog("lake").unwrap();
    assert_eq!(def.landing_path.as_deref(), Some("s3://bucket/landing/"));
}

#[test]
fn no_landing_path_means_no_landing_zone() {
    let config = parse_at("[catalogs.lake]\nmetadata = \"x\"\ndata_path = \"d\"\n").unwrap();
    let def = config.catalog("lake").unwrap();
    assert_eq!((&def.landing_path, &def.promote_into), (&None, &None));
}

#[test]
fn promote_into_names_another_raw_schema() {
    let text = lake("landing").replace(
        "landing_path = \"landing\"\n",
        "landing_path = \"landing\"\npromote_into = \"raw_landed\"\n",
    ) + "[catalogs.lake.schemas.raw_landed]\nwriter = \"io_manager\"\nlayer = \"raw\"\n";
    let config = parse_at(&text).unwrap();
    assert_eq!(
        config.catalog("lake").unwrap().promote_into.as_deref(),
        Some("raw_landed")
    );
}

#[test]
fn a_landing_path_inside_its_own_data_path_is_an_error() {
    assert_eq!(
        message(&lake("data/lake/landing")),
        "/etc/srdp/srdp.toml:4: key 'catalogs.lake.landing_path': the landing zone of catalog \
         'lake' (/etc/srdp/data/lake/landing/) is inside its own data path \
         (/etc/srdp/data/lake/); a landing zone and a data path must not hold one another, since \
         either would let one side delete the other's files (DuckLake's cleanup or the landing \
         zone's retention). Give the landing zone a folder of its own beside the data path, such \
         as landing_path = \"/etc/srdp/data/landing/\""
    );
}

#[test]
fn a_landing_path_equal_to_or_containing_the_data_path_is_an_error() {
    let same = message(&lake("data/lake/"));
    assert!(
        same.starts_with(
            "/etc/srdp/srdp.toml:4: key 'catalogs.lake.landing_path': the landing zone of \
             catalog 'lake' (/etc/srdp/data/lake/) is the same folder as its own data path \
             (/etc/srdp/data/lake/); a landing zone and a data path must not hold one another"
        ),
        "{same}"
    );
    let contains = message(&lake("data"));
    assert!(
        contains.starts_with(
            "/etc/srdp/srdp.toml:4: key 'catalogs.lake.landing_path': the landing zone of \
             catalog 'lake' (/etc/srdp/data/) contains its own data path (/etc/srdp/data/lake/); \
             a landing zone and a data path must not hold one another, since either would let \
             one side delete the other's files"
        ),
        "{contains}"
    );
}

#[test]
fn a_sibling_whose_name_extends_the_data_path_is_apart() {
    let config = parse_at(&lake("data/lake2")).unwrap();
    assert_eq!(
        config.catalog("lake").unwrap().landing_path.as_deref(),
        Some("/etc/srdp/data/lake2/")
    );
}

#[test]
fn a_landing_path_overlapping_another_catalogs_data_path_is_an_error() {
    let text = format!(
        "{}[catalogs.other]\nmetadata = \"y\"\ndata_path = \"s3://bucket/lake/\"\n",
        lake("s3://bucket/lake/landing")
    );
    assert_eq!(
        message(&text),
        "/etc/srdp/srdp.toml:4: key 'catalogs.lake.landing_path': the landing zone of catalog \
         'lake' (s3://bucket/lake/landing/) is inside the data path of catalog 'other' \
         (s3://bucket/lake/); a landing zone and a data path must not hold one another, since \
         either would let one side delete the other's files (DuckLake's cleanup or the landing \
         zone's retention). Give the landing zone a folder of its own beside the data path, such \
         as landing_path = \"s3://bucket/landing/\""
    );
    // A data path written as a file:// URL is the same folder as its local path.
    let text = format!(
        "{}[catalogs.other]\nmetadata = \"y\"\ndata_path = \"file:///etc/srdp/landing/x\"\n",
        lake("landing")
    );
    assert!(
        message(&text).starts_with(
            "/etc/srdp/srdp.toml:4: key 'catalogs.lake.landing_path': the landing zone of \
             catalog 'lake' (/etc/srdp/landing/) contains the data path of catalog 'other' \
             (file:///etc/srdp/landing/x/);"
        ),
        "{}",
        message(&text)
    );
}

#[test]
fn an_undefined_promotion_target_is_an_error() {
    let text = "[catalogs.lake]\nmetadata = \"x\"\ndata_path = \"d\"\nlanding_path = \"landing\"\n";
    assert_eq!(
        message(text),
        "/etc/srdp/srdp.toml:4: key 'catalogs.lake.landing_path': loads promoted from the \
         landing zone go into schema 'raw' (the default of promote_into), which is not defined. \
         Add [catalogs.lake.schemas.raw] with writer = \"io_manager\" and layer = \"raw\", or set \
         promote_into to a raw schema the IO manager owns"
    );
    let text = format!(
        "{}promote_into = \"inbox\"\n",
        lake("landing")
            .split_once("[catalogs.lake.schemas")
            .unwrap()
            .0
    );
    assert_eq!(
        message(&text),
        "/etc/srdp/srdp.toml:5: key 'catalogs.lake.promote_into': loads promoted from the \
         landing zone go into schema 'inbox', which is not defined. Add \
         [catalogs.lake.schemas.inbox] with writer = \"io_manager\" and layer = \"raw\", or set \
         promote_into to a raw schema the IO manager owns"
    );
}

#[test]
fn a_promotion_target_outside_the_raw_layer_is_an_error() {
    let text = lake("landing").replace("layer = \"raw\"", "layer = \"serving\"");
    assert_eq!(
        message(&text),
        "/etc/srdp/srdp.toml:4: key 'catalogs.lake.landing_path': loads promoted from the \
         landing zone go into schema 'raw' (the default of promote_into), which has layer \
         'serving'; promoted loads go into a raw schema. Set layer = \"raw\" under \
         [catalogs.lake.schemas.raw], or set promote_into to a raw schema the IO manager owns"
    );
}

#[test]
fn a_promotion_target_dlt_writes_is_an_error() {
    let text = lake("landing").replace("writer = \"io_manager\"", "writer = \"dlt\"");
    assert_eq!(
        message(&text),
        "/etc/srdp/srdp.toml:4: key 'catalogs.lake.landing_path': loads promoted from the \
         landing zone go into schema 'raw' (the default of promote_into), which dlt writes; \
         dlt's strict loads and promoted loads never share a schema, and the IO manager \
         promotes. Add [catalogs.lake.schemas.raw_landed] with writer = \"io_manager\" and layer \
         = \"raw\", and set promote_into = \"raw_landed\""
    );
    // Relaxing single_writer does not let them share a schema either.
    let relaxed = lake("landing").replace(
        "writer = \"io_manager\"",
        "writer = [\"dlt\", \"io_manager\"]",
    ) + "[rules]\nsingle_writer = false\n";
    assert!(
        message(&relaxed).contains("which dlt writes;"),
        "{}",
        message(&relaxed)
    );
}

#[test]
fn a_promotion_target_the_io_manager_does_not_own_is_an_error_while_single_writer_is_on() {
    let text = lake("landing").replace("writer = \"io_manager\"", "writer = \"dbt\"");
    assert_eq!(
        message(&text),
        "/etc/srdp/srdp.toml:4: key 'catalogs.lake.landing_path': loads promoted from the \
         landing zone go into schema 'raw' (the default of promote_into), which is owned by \
         'dbt', and the IO manager promotes. Set writer = \"io_manager\" under \
         [catalogs.lake.schemas.raw], set promote_into to a raw schema the IO manager owns, or \
         relax the rule with the line `single_writer = false` under [rules]"
    );
    assert!(parse_at(&format!("{text}[rules]\nsingle_writer = false\n")).is_ok());
}

#[test]
fn promote_into_without_landing_path_is_an_error() {
    let text = "[catalogs.lake]\nmetadata = \"x\"\ndata_path = \"d\"\npromote_into = \"raw\"\n";
    assert_eq!(
        message(text),
        "/etc/srdp/srdp.toml:4: key 'catalogs.lake.promote_into': needs landing_path: \
         promote_into names the schema loads promoted from the landing zone go into. Set \
         landing_path on [catalogs.lake] or remove promote_into"
    );
    let empty = lake("landing").replace(
        "landing_path = \"landing\"\n",
        "landing_path = \"landing\"\npromote_into = \" \"\n",
    );
    assert_eq!(
        message(&empty),
        "/etc/srdp/srdp.toml:5: key 'catalogs.lake.promote_into': must not be empty; remove the \
         key to use the default \"raw\""
    );
    assert_eq!(
        message(&lake(" ")),
        "/etc/srdp/srdp.toml:4: key 'catalogs.lake.landing_path': must not be empty; give a \
         local folder or s3://bucket/prefix/"
    );
}

#[test]
fn a_schema_of_layer_landing_is_an_error() {
    for writer in ["dlt", "io_manager"] {
        let text = format!(
            "[catalogs.lake]\nmetadata = \"x\"\ndata_path = \"d\"\n\
             [catalogs.lake.schemas.landing]\nwriter = \"{writer}\"\nlayer = \"landing\"\n"
        );
        assert_eq!(
            message(&text),
            "/etc/srdp/srdp.toml:6: key 'catalogs.lake.schemas.landing.layer': the landing zone \
             is a folder outside DuckLake, not a schema; remove [catalogs.lake.schemas.landing] \
             and set landing_path on [catalogs.lake] (a local folder or s3:// prefix outside the \
             data path)",
            "{writer}"
        );
    }
}
