//! Landing zones and data paths compared in one spelling each ([`crate::config::canonical`]):
//! every pair of a landing zone and a data path, and two catalogs' landing zones, in both
//! directions; messages show the written and the compared form.

use super::message;
use crate::config::parse;
use std::path::{Path, PathBuf};

/// A catalog `name` with `data_path` on its third line and `landing_path` (if any) on its fourth.
fn catalog(name: &str, data: &str, landing: Option<&str>) -> String {
    let landing = landing
        .map(|l| format!("landing_path = \"{l}\"\n[catalogs.{name}.schemas.raw]\nwriter = \"io_manager\"\nlayer = \"raw\"\n"))
        .unwrap_or_default();
    format!("[catalogs.{name}]\nmetadata = \"{name}.ducklake\"\ndata_path = \"{data}\"\n{landing}")
}

#[test]
fn a_file_url_through_localhost_and_dot_dot_is_inside_its_own_data_path() {
    assert_eq!(
        message(&catalog(
            "lake",
            "data/lake",
            Some("file://localhost/etc/srdp/data/x/../lake/landing")
        )),
        "/etc/srdp/srdp.toml:4: key 'catalogs.lake.landing_path': the landing zone of catalog \
         'lake' (file://localhost/etc/srdp/data/x/../lake/landing/, that is \
         file:///etc/srdp/data/lake/landing/) is inside its own data path (/etc/srdp/data/lake/); \
         a landing zone and a data path must not hold one another, since either would let one \
         side delete the other's files (DuckLake's cleanup or the landing zone's retention). Give \
         the landing zone a folder of its own beside the data path, such as landing_path = \
         \"/etc/srdp/data/landing/\""
    );
}

#[test]
fn s3_scheme_spellings_and_double_slashes_overlap_in_both_directions() {
    let inside = message(&catalog(
        "lake",
        "s3://b/lake",
        Some("S3A://b//lake/landing"),
    ));
    assert!(
        inside.starts_with(
            "/etc/srdp/srdp.toml:4: key 'catalogs.lake.landing_path': the landing zone of \
             catalog 'lake' (S3A://b//lake/landing/, that is s3://b/lake/landing/) is inside its \
             own data path (s3://b/lake/);"
        ),
        "{inside}"
    );
    let contains = format!(
        "{}{}",
        catalog("lake", "data/lake", Some("s3://b/landing")),
        catalog("other", "s3n://b/landing/./x/../other", None)
    );
    assert!(
        message(&contains).starts_with(
            "/etc/srdp/srdp.toml:4: key 'catalogs.lake.landing_path': the landing zone of \
             catalog 'lake' (s3://b/landing/) contains the data path of catalog 'other' \
             (s3n://b/landing/./x/../other/, that is s3://b/landing/other/);"
        ),
        "{}",
        message(&contains)
    );
}

#[test]
fn two_catalogs_landing_zones_must_be_apart() {
    let text = format!(
        "{}{}",
        catalog("a", "data/a", Some("landing/a")),
        catalog("b", "data/b", Some("file:///etc/srdp/landing/"))
    );
    assert_eq!(
        message(&text),
        "/etc/srdp/srdp.toml:4: key 'catalogs.a.landing_path': the landing zone of catalog 'a' \
         (/etc/srdp/landing/a/) is inside the landing zone of catalog 'b' \
         (file:///etc/srdp/landing/); two catalogs' landing zones must not hold one another, \
         since each catalog's promotion and retention would take the other's loads. Give each \
         catalog a landing folder of its own"
    );
    let apart = format!(
        "{}{}",
        catalog("a", "data/a", Some("landing/a")),
        catalog("b", "data/b", Some("landing/b"))
    );
    assert!(super::parse_at(&apart).is_ok());
}

#[test]
fn locations_that_name_no_folder_are_refused_where_written() {
    assert_eq!(
        message(&catalog("lake", "file://nas/lake", None)),
        "/etc/srdp/srdp.toml:3: key 'catalogs.lake.data_path': 'file://nas/lake' names a folder \
         on host 'nas'; srdp reads local folders only (file:///path or a plain path)"
    );
    // Other object stores are not srdp's to judge: accepted as written.
    assert!(super::parse_at(&catalog("lake", "gs://b/lake", Some("GS://b/landing"))).is_ok());
}

#[test]
fn a_symlink_to_the_data_path_is_the_data_path() {
    let dir = std::env::temp_dir().join(format!("srdp-landing-link-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("data/lake")).unwrap();
    let dir: PathBuf = std::fs::canonicalize(&dir).unwrap();
    std::os::unix::fs::symlink(dir.join("data"), dir.join("alias")).unwrap();
    let text = catalog("lake", "data/lake", Some("alias/lake/landing"));
    let error = parse(&dir.join("srdp.toml"), &text)
        .unwrap_err()
        .to_string();
    let d = dir.display();
    assert!(
        error.starts_with(&format!(
            "{d}/srdp.toml:4: key 'catalogs.lake.landing_path': the landing zone of catalog \
             'lake' ({d}/alias/lake/landing/, that is file://{d}/data/lake/landing/) is inside \
             its own data path ({d}/data/lake/);"
        )),
        "{error}"
    );
    std::fs::remove_dir_all(Path::new(&dir)).unwrap();
}
