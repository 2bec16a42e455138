//! Schema patterns (`[catalogs.<c>.schemas."dbt_*"]`): what they give their writer, and the
//! files the single_writer rule refuses for them, with the exact message.

use super::super::*;
use super::BASE;
use crate::config::parse;
use std::path::Path;

fn parse_with(extra: &str) -> crate::error::Result<Config> {
    parse(Path::new("/etc/srdp/srdp.toml"), &format!("{BASE}{extra}"))
}

fn refusal(extra: &str) -> String {
    parse_with(extra).unwrap_err().to_string()
}

const DBT_PATTERNS: &str = r#"
[catalogs.lake.schemas."dbt_*"]
writer = "dbt"
layer = "curated"

[catalogs.lake.schemas."curated_*"]
writer = "dbt"
layer = "curated"

[catalogs.lake.schemas."dbt_ci_*"]
writer = "dbt"
layer = "serving"
"#;

#[test]
fn a_pattern_gives_its_writer_every_derived_schema_and_exact_entries_win() {
    let c = parse_with(DBT_PATTERNS).unwrap();
    let def = c.catalog("lake").unwrap();
    let rule = |schema: &str| owner(def, schema).map(|o| (o.writers.join(","), o.layer, o.rule));
    assert_eq!(
        rule("dbt_alice"),
        Some(("dbt".into(), "curated".into(), "pattern 'dbt_*'".into()))
    );
    assert_eq!(
        rule("DBT_CI_1234"),
        Some(("dbt".into(), "serving".into(), "pattern 'dbt_ci_*'".into()))
    );
    assert_eq!(
        rule("curated_dbt_test__audit"),
        Some(("dbt".into(), "curated".into(), "pattern 'curated_*'".into()))
    );
    assert_eq!(
        rule("curated"),
        Some(("dbt".into(), "curated".into(), "schema 'curated'".into()))
    );
    assert_eq!(rule("scratch"), None);
    let check = check_writer(&c, "lake", "dbt_alice_marts", "dbt").unwrap();
    assert_eq!(
        (check.owner.as_deref(), check.layer.as_deref()),
        (Some("dbt"), Some("curated"))
    );
    assert_eq!(
        check_writer(&c, "lake", "dbt_alice", "io_manager")
            .unwrap_err()
            .to_string(),
        "writer 'io_manager' may not write schema 'dbt_alice' of catalog \
         'lake': it is owned by 'dbt' (single_writer). 'io_manager' may write: raw_landed, \
         serving. To relax the rule, add the line `single_writer = false` under [rules] in \
         /etc/srdp/srdp.toml"
    );
    assert_eq!(
        check_writer(&c, "lake", "ci_1", "dbt")
            .unwrap_err()
            .to_string(),
        "writer 'dbt' may not write schema 'ci_1' of catalog 'lake': it has \
         no owner in the definition; define [catalogs.lake.schemas.ci_1] with writer and layer. \
         'dbt' may write: curated, curated_*, dbt_*, dbt_ci_*. To relax the rule, add the line \
         `single_writer = false` under [rules] in /etc/srdp/srdp.toml"
    );
}

#[test]
fn a_pattern_that_matches_another_writers_schema_is_refused_when_the_file_is_read() {
    assert_eq!(
        refusal(
            "\n[catalogs.lake.schemas.\"Cur*\"]\nwriter = \"io_manager\"\nlayer = \"serving\"\n"
        ),
        "/etc/srdp/srdp.toml:24: key 'catalogs.lake.schemas.\"Cur*\"': pattern \"Cur*\" of \
         writer 'io_manager' matches schema \"curated\" (line 16) of writer 'dbt'; with the \
         single_writer rule on, a schema has exactly one writer. Narrow the pattern, rename the \
         schema, or relax the rule with the line `single_writer = false` under [rules]"
    );
    // The same writer's schema under its pattern is fine; relaxed, the overlap is allowed.
    assert!(parse_with(
        "\n[catalogs.lake.schemas.\"cur*\"]\nwriter = \"dbt\"\nlayer = \"curated\"\n"
    )
    .is_ok());
    assert!(parse_with(
        "\n[catalogs.lake.schemas.\"cur*\"]\nwriter = \"io_manager\"\nlayer = \"serving\"\n\
         \n[rules]\nsingle_writer = false\n"
    )
    .is_ok());
}

#[test]
fn overlapping_patterns_of_two_writers_are_refused_naming_both() {
    assert_eq!(
        refusal(&format!(
            "{DBT_PATTERNS}\n[catalogs.lake.schemas.\"DBT_CI_NIGHTLY_*\"]\nwriter = \
             \"io_manager\"\nlayer = \"serving\"\n"
        )),
        "/etc/srdp/srdp.toml:36: key 'catalogs.lake.schemas.\"DBT_CI_NIGHTLY_*\"': pattern \
         \"DBT_CI_NIGHTLY_*\" of writer 'io_manager' overlaps pattern \"dbt_*\" (line 24) of \
         writer 'dbt': a schema such as \"DBT_CI_NIGHTLY_\" matches both; with the single_writer \
         rule on, a schema has exactly one writer. Narrow the pattern, rename the schema, or \
         relax the rule with the line `single_writer = false` under [rules]"
    );
    // Two long prefixes of two writers that agree on their first 63 bytes share the cut name.
    let (a, b) = (
        format!("{}_a", "x".repeat(62)),
        format!("{}_b", "x".repeat(62)),
    );
    let text = format!(
        "\n[catalogs.lake.schemas.\"{a}*\"]\nwriter = \"dbt\"\nlayer = \"curated\"\n\
         \n[catalogs.lake.schemas.\"{b}*\"]\nwriter = \"io_manager\"\nlayer = \"serving\"\n"
    );
    assert!(refusal(&text).contains(&format!(
        "overlaps pattern \"{a}*\" (line 24) of writer 'dbt': a schema such as \"{}_\" matches both",
        "x".repeat(62)
    )));
}

#[test]
fn a_pattern_matching_a_tenant_dataset_of_another_writer_is_refused() {
    let text = BASE.replace(
        "promote_into = \"raw_landed\"\n",
        "promote_into = \"raw_landed\"\nproject = \"acme\"\n",
    ) + "\n[catalogs.lake.schemas.\"acme_*\"]\nwriter = \"dbt\"\nlayer = \"curated\"\n";
    assert_eq!(
        parse(Path::new("/etc/srdp/srdp.toml"), &text)
            .unwrap_err()
            .to_string(),
        "/etc/srdp/srdp.toml:25: key 'catalogs.lake.schemas.\"acme_*\"': pattern \"acme_*\" of \
         writer 'dbt' matches dataset \"acme_raw\" of project 'acme', owned by 'dlt'; with the \
         single_writer rule on, a schema has exactly one writer. Narrow the pattern, rename the \
         schema, or relax the rule with the line `single_writer = false` under [rules]"
    );
}

#[test]
fn dlt_raw_and_malformed_patterns_are_refused() {
    let cases = [
        (
            "\n[catalogs.lake.schemas.\"raw_*\"]\nwriter = \"dlt\"\nlayer = \"raw\"\n",
            "/etc/srdp/srdp.toml:25: key 'catalogs.lake.schemas.\"raw_*\".writer': dlt owns \
             schemas by exact name only: each load's dataset and its raw rules are looked up by \
             name. Name each schema dlt loads under [catalogs.lake.schemas.<schema>], or give the \
             pattern another writer",
        ),
        (
            "\n[catalogs.lake.schemas.\"raw_*\"]\nwriter = \"io_manager\"\nlayer = \"raw\"\n",
            "/etc/srdp/srdp.toml:26: key 'catalogs.lake.schemas.\"raw_*\".layer': a pattern may \
             not have layer 'raw': raw schemas are named one by one (dlt's datasets and \
             promote_into are looked up by name). Name each raw schema under \
             [catalogs.lake.schemas.<schema>], or give the pattern another layer",
        ),
        (
            "\n[catalogs.lake.schemas.\"*\"]\nwriter = \"dbt\"\nlayer = \"curated\"\n",
            "/etc/srdp/srdp.toml:24: key 'catalogs.lake.schemas.\"*\"': \"*\" alone would give \
             every schema to one writer; write a prefix before the *, such as \"dbt_*\"",
        ),
        (
            "\n[catalogs.lake.schemas.\"*_audit\"]\nwriter = \"dbt\"\nlayer = \"curated\"\n",
            "/etc/srdp/srdp.toml:24: key 'catalogs.lake.schemas.\"*_audit\"': \"*_audit\": only \
             a * at the end of a schema name is a wildcard (a prefix pattern such as \"dbt_*\", \
             which gives the writer every schema starting with dbt_); write one prefix and one \
             trailing *",
        ),
    ];
    for (extra, expected) in cases {
        assert_eq!(refusal(extra), expected);
    }
}

#[test]
fn among_thousands_of_patterns_the_first_overlapping_one_above_is_named() {
    // 3,000 patterns of dbt that overlap nothing, and around them two that the last pattern, of
    // another writer, overlaps: one longer and one shorter than it. The refusal names the one
    // higher in the file, whichever it is, as a scan of every pattern above would.
    let block = |prefix: &str, writer: &str| {
        format!(
            "\n[catalogs.lake.schemas.\"{prefix}*\"]\nwriter = \"{writer}\"\nlayer = \"curated\"\n"
        )
    };
    let filler = |from: usize| -> String {
        (from..from + 1500)
            .map(|i| block(&format!("dbt_{i:05}_"), "dbt"))
            .collect()
    };
    let line_of = |text: &str, prefix: &str| {
        let at = text.find(&format!("\"{prefix}*\"]")).unwrap();
        text[..at].lines().count()
    };
    for (first, second) in [("team_a_b_", "team_"), ("team_", "team_a_b_")] {
        let extra = format!(
            "{}{}{}{}{}",
            filler(0),
            block(first, "dbt"),
            filler(1500),
            block(second, "dbt"),
            block("team_a_", "io_manager")
        );
        let text = format!("{BASE}{extra}");
        assert_eq!(
            refusal(&extra),
            format!(
                "/etc/srdp/srdp.toml:{}: key 'catalogs.lake.schemas.\"team_a_*\"': pattern \
                 \"team_a_*\" of writer 'io_manager' overlaps pattern \"{first}*\" (line {}) of \
                 writer 'dbt': a schema such as \"{}\" matches both; with the single_writer rule \
                 on, a schema has exactly one writer. Narrow the pattern, rename the schema, or \
                 relax the rule with the line `single_writer = false` under [rules]",
                line_of(&text, "team_a_"),
                line_of(&text, first),
                crate::config::shared_name("team_a_", first)
            )
        );
    }
    // The same file with the last pattern given to dbt too is accepted.
    let extra = format!(
        "{}{}{}",
        filler(0),
        block("team_", "dbt"),
        block("team_a_", "dbt")
    );
    assert_eq!(
        parse_with(&extra)
            .unwrap()
            .catalog("lake")
            .unwrap()
            .patterns
            .len(),
        1502
    );
}
