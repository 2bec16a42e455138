use super::*;
use crate::config::parse;
use std::path::Path;

const BASE: &str = r#"
[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/lake"

[catalogs.lake.schemas.raw]
writer = "dlt"
layer = "raw"

[catalogs.lake.schemas.curated]
writer = "dbt"
layer = "curated"
"#;

fn config(extra: &str) -> Config {
    parse(Path::new("/etc/srdp/srdp.toml"), &format!("{extra}{BASE}")).unwrap()
}

fn snap(id: i64, author: Option<&str>, changes: &str) -> Snapshot {
    Snapshot {
        id,
        time: id * 1_000_000,
        author: author.map(str::to_string),
        message: author.map(|a| format!("{a} wrote")),
        changes: Some(changes.to_string()),
    }
}

fn v(kind: ObjectKind, id: i64, name: &str, schema_id: Option<i64>, begin: i64) -> Version {
    Version {
        kind,
        id,
        name: name.to_string(),
        schema_id,
        begin,
    }
}

/// (snapshot, author, schema, table, change, owner, allowed, note) of each row.
type Flat = (
    Option<i64>,
    Option<String>,
    Option<String>,
    Option<String>,
    String,
    Option<String>,
    bool,
    Option<String>,
);

fn flat(rows: Vec<AuditRow>) -> Vec<Flat> {
    rows.into_iter()
        .map(|r| {
            (
                r.snapshot_id,
                r.author,
                r.schema,
                r.table,
                r.change,
                r.owner,
                r.allowed,
                r.note,
            )
        })
        .collect()
}

fn s(x: &str) -> Option<String> {
    Some(x.to_string())
}

#[test]
fn parses_ids_and_quoted_names() {
    assert_eq!(
        parse_changes(r#"created_table:"r,a.w"."t""x,y",inlined_insert:4,created_schema:"s""#)
            .unwrap(),
        vec![
            Change {
                kind: "created_table".into(),
                target: Target::Names(vec!["r,a.w".into(), "t\"x,y".into()])
            },
            Change {
                kind: "inlined_insert".into(),
                target: Target::Id(4)
            },
            Change {
                kind: "created_schema".into(),
                target: Target::Names(vec!["s".into()])
            },
        ]
    );
    assert_eq!(parse_changes("").unwrap(), vec![]);
}

#[test]
fn refuses_malformed_changes() {
    assert_eq!(
        parse_changes("inlined_insert").unwrap_err(),
        "no ':' after position 0 in 'inlined_insert'"
    );
    assert_eq!(
        parse_changes("created_table:\"raw").unwrap_err(),
        "unterminated name in 'created_table:\"raw'"
    );
    assert_eq!(
        parse_changes("dropped_table:x").unwrap_err(),
        "'x' is neither an id nor a quoted name"
    );
    assert_eq!(
        parse_changes("created_schema:\"a\"b").unwrap_err(),
        "unexpected 'b' at position 18 in 'created_schema:\"a\"b'"
    );
}

#[test]
fn names_changes_in_the_audit_words() {
    let words: Vec<&str> = [
        "created_table",
        "inlined_insert",
        "inserted_into_table",
        "inlined_delete",
        "deleted_from_table",
        "altered_table",
        "dropped_table",
        "dropped_view",
        "inline_flush",
        "merge_adjacent",
        "rewrite_delete",
        "something_new",
    ]
    .iter()
    .map(|k| change_word(k))
    .collect();
    assert_eq!(
        words,
        [
            "created",
            "inserted",
            "inserted",
            "deleted",
            "deleted",
            "altered",
            "dropped",
            "view dropped",
            "flushed",
            "compacted",
            "rewritten",
            "something_new"
        ]
    );
}

fn history() -> (Vec<Snapshot>, Vec<Version>) {
    let versions = vec![
        v(ObjectKind::Schema, 0, "main", None, 0),
        v(ObjectKind::Schema, 1, "raw", None, 1),
        v(ObjectKind::Schema, 2, "curated", None, 2),
        v(ObjectKind::Table, 3, "orders", Some(1), 3),
        // renamed at snapshot 7
        v(ObjectKind::Table, 3, "orders_v2", Some(1), 7),
        v(ObjectKind::Table, 4, "x", Some(0), 5),
        v(ObjectKind::View, 5, "vw", Some(2), 6),
    ];
    let snapshots = vec![
        snap(0, None, "created_schema:\"main\""),
        snap(1, Some("dlt"), "created_schema:\"raw\""),
        snap(2, Some("dbt"), "created_schema:\"curated\""),
        snap(
            3,
            Some("dlt"),
            "created_table:\"raw\".\"orders\",inlined_insert:3,inserted_into_table:3",
        ),
        snap(4, Some("dbt"), "deleted_from_table:3"),
        snap(5, None, "created_table:\"main\".\"x\""),
        snap(
            6,
            Some("dbt"),
            "created_view:\"curated\".\"vw\",inline_flush:3",
        ),
        snap(7, Some("srdp"), "merge_adjacent:3"),
        snap(
            8,
            Some("dlt"),
            "dropped_table:4,dropped_view:5,dropped_schema:2",
        ),
        snap(9, None, "inline_flush:3,dropped_table:99"),
    ];
    (snapshots, versions)
}

#[test]
fn judges_each_write_by_its_author_and_the_schema_owner() {
    let config = config("");
    let def = config.catalog("lake").unwrap();
    let (snapshots, versions) = history();
    let rows = audit(
        &config,
        def,
        &snapshots,
        &versions,
        &Since::All,
        &RowChecks::new(),
    )
    .unwrap();
    let dlt = || s("dlt");
    let dbt = || s("dbt");
    assert_eq!(
        flat(rows),
        vec![
            (
                Some(0),
                None,
                s("main"),
                None,
                "schema created".into(),
                None,
                true,
                s("DuckLake created the catalog")
            ),
            (
                Some(1),
                dlt(),
                s("raw"),
                None,
                "schema created".into(),
                dlt(),
                true,
                None
            ),
            (
                Some(2),
                dbt(),
                s("curated"),
                None,
                "schema created".into(),
                dbt(),
                true,
                None
            ),
            (
                Some(3),
                dlt(),
                s("raw"),
                s("orders"),
                "created".into(),
                dlt(),
                true,
                None
            ),
            (
                Some(3),
                dlt(),
                s("raw"),
                s("orders"),
                "inserted".into(),
                dlt(),
                true,
                None
            ),
            (
                Some(4),
                dbt(),
                s("raw"),
                s("orders"),
                "deleted".into(),
                dlt(),
                false,
                s("'dbt' wrote schema 'raw', owned by 'dlt'")
            ),
            (
                Some(5),
                None,
                s("main"),
                s("x"),
                "created".into(),
                None,
                false,
                s("unknown writer (no commit author)")
            ),
            (
                Some(6),
                dbt(),
                s("curated"),
                s("vw"),
                "view created".into(),
                dbt(),
                true,
                None
            ),
            (
                Some(6),
                dbt(),
                s("raw"),
                s("orders"),
                "flushed".into(),
                dlt(),
                true,
                s("maintenance by 'dbt'; the rows are unchanged")
            ),
            (
                Some(7),
                s("srdp"),
                s("raw"),
                s("orders_v2"),
                "compacted".into(),
                dlt(),
                true,
                s("srdp maintenance; the rows are unchanged")
            ),
            (
                Some(8),
                dlt(),
                s("curated"),
                None,
                "schema dropped".into(),
                dbt(),
                false,
                s("'dlt' wrote schema 'curated', owned by 'dbt'")
            ),
            (
                Some(8),
                dlt(),
                s("curated"),
                s("vw"),
                "view dropped".into(),
                dbt(),
                false,
                s("'dlt' wrote schema 'curated', owned by 'dbt'")
            ),
            (
                Some(8),
                dlt(),
                s("main"),
                s("x"),
                "dropped".into(),
                None,
                false,
                s("'dlt' wrote schema 'main', which srdp.toml does not name")
            ),
            (
                Some(9),
                None,
                None,
                None,
                "dropped".into(),
                None,
                false,
                s("the metadata no longer names what this change touched")
            ),
            (
                Some(9),
                None,
                s("raw"),
                s("orders_v2"),
                "flushed".into(),
                dlt(),
                true,
                s("maintenance without a commit author; the rows are unchanged")
            ),
        ]
    );
}

#[test]
fn relaxed_single_writer_allows_with_the_line_that_relaxed_it() {
    let config = config("[rules]\nsingle_writer = false\n");
    let def = config.catalog("lake").unwrap();
    let (snapshots, versions) = history();
    let rows = audit(
        &config,
        def,
        &snapshots,
        &versions,
        &Since::Snapshot(4),
        &RowChecks::new(),
    )
    .unwrap();
    let notes: Vec<(Option<i64>, bool, Option<String>)> = rows
        .into_iter()
        .filter(|r| r.snapshot_id < Some(6))
        .map(|r| (r.snapshot_id, r.allowed, r.note))
        .collect();
    assert_eq!(
        notes,
        vec![
            (Some(4), true, s("single_writer is relaxed by /etc/srdp/srdp.toml:2: 'dbt' wrote schema 'raw', owned by 'dlt'")),
            (Some(5), true, s("single_writer is relaxed by /etc/srdp/srdp.toml:2: unknown writer (no commit author)")),
        ]
    );
}

#[test]
fn since_a_time_starts_at_the_first_snapshot_at_or_after_it() {
    let config = config("");
    let def = config.catalog("lake").unwrap();
    let (snapshots, versions) = history();
    let ids: Vec<Option<i64>> = audit(
        &config,
        def,
        &snapshots,
        &versions,
        &Since::Time(8_000_000),
        &RowChecks::new(),
    )
    .unwrap()
    .into_iter()
    .map(|r| r.snapshot_id)
    .collect();
    assert_eq!(ids, [Some(8), Some(8), Some(8), Some(9), Some(9)]);
}

#[test]
fn reads_since_as_snapshot_id_or_timestamp_text() {
    assert_eq!(parse_since(" 12 ").unwrap(), Ok(12));
    assert_eq!(
        parse_since("2026-01-01").unwrap(),
        Err("2026-01-01".to_string())
    );
    assert_eq!(
        parse_since("-1").unwrap_err().to_string(),
        "since := must be a snapshot id (0 or more) or a timestamp, got '-1'"
    );
}

#[test]
fn lists_schemas_the_definition_does_not_name() {
    let on = config("");
    let rows = unnamed_schemas(
        &on,
        on.catalog("lake").unwrap(),
        &[
            "curated".into(),
            "main".into(),
            "raw".into(),
            "scratch".into(),
        ],
        // A table was once created in main (schema id 0), and dropped since.
        &[
            v(ObjectKind::Schema, 0, "main", None, 0),
            v(ObjectKind::Table, 7, "oops", Some(0), 3),
        ],
    );
    assert_eq!(
        rows.iter()
            .map(|r| (r.schema.clone(), r.change.as_str(), r.allowed, r.note.clone()))
            .collect::<Vec<_>>(),
        vec![
            (s("main"), UNNAMED_SCHEMA, false, s("no writer may write it while single_writer is on; define [catalogs.lake.schemas.main] with writer and layer, or drop it")),
            (s("scratch"), UNNAMED_SCHEMA, false, s("no writer may write it while single_writer is on; define [catalogs.lake.schemas.scratch] with writer and layer, or drop it")),
        ]
    );
    let off = config("[rules]\nsingle_writer = false\n");
    let rows = unnamed_schemas(
        &off,
        off.catalog("lake").unwrap(),
        &["main".into()],
        &[
            v(ObjectKind::Schema, 0, "main", None, 0),
            v(ObjectKind::View, 8, "v", Some(0), 2),
        ],
    );
    assert_eq!(
        (rows[0].allowed, rows[0].note.clone()),
        (
            true,
            s("single_writer is relaxed by /etc/srdp/srdp.toml:2: any writer may write it")
        )
    );
}

#[test]
fn builds_the_audit_queries() {
    let q = AuditQueries::new("my lake", "meta");
    assert_eq!(
        q.snapshots(3),
        "SELECT s.snapshot_id, epoch_us(s.snapshot_time::TIMESTAMPTZ), c.author, c.commit_message, c.changes_made \
         FROM \"__ducklake_metadata_my lake\".\"meta\".\"ducklake_snapshot\" s \
         LEFT JOIN \"__ducklake_metadata_my lake\".\"meta\".\"ducklake_snapshot_changes\" c \
         ON c.snapshot_id = s.snapshot_id WHERE s.snapshot_id >= 3 ORDER BY s.snapshot_id"
    );
    assert_eq!(
        q.versions(),
        "SELECT 'table', table_id, table_name, schema_id, begin_snapshot FROM \"__ducklake_metadata_my lake\".\"meta\".\"ducklake_table\" \
         UNION ALL SELECT 'view', view_id, view_name, schema_id, begin_snapshot FROM \"__ducklake_metadata_my lake\".\"meta\".\"ducklake_view\" \
         UNION ALL SELECT 'schema', schema_id, schema_name, NULL::BIGINT, begin_snapshot FROM \"__ducklake_metadata_my lake\".\"meta\".\"ducklake_schema\""
    );
    assert_eq!(
        timestamp_micros(&crate::sql::Literal::new("it's")),
        "SELECT epoch_us(TRY_CAST('it''s' AS TIMESTAMPTZ))"
    );
}

#[test]
fn names_the_entry_that_gives_each_written_schema_to_its_owner() {
    let c = parse(
        Path::new("/etc/srdp/srdp.toml"),
        &format!(
            "{BASE}\n[catalogs.lake.schemas.\"dbt_*\"]\nwriter = \"dbt\"\nlayer = \"curated\"\n"
        ),
    )
    .unwrap();
    let snapshots = vec![
        snap(
            1,
            Some("dbt"),
            r#"created_schema:"dbt_alice",created_table:"dbt_alice"."m""#,
        ),
        snap(2, Some("dbt"), r#"created_table:"curated"."m""#),
        snap(3, Some("io_manager"), r#"created_table:"dbt_alice"."x""#),
        snap(4, Some("dbt"), r#"created_table:"ci_1"."m""#),
    ];
    let rows = audit(
        &c,
        c.catalog("lake").unwrap(),
        &snapshots,
        &[],
        &Since::All,
        &RowChecks::new(),
    )
    .unwrap();
    assert_eq!(
        rows.iter()
            .map(|r| (
                r.snapshot_id,
                r.schema.as_deref(),
                r.table.as_deref(),
                r.ownership.as_deref(),
                r.allowed,
                r.note.as_deref()
            ))
            .collect::<Vec<_>>(),
        vec![
            (
                Some(1),
                Some("dbt_alice"),
                None,
                Some("pattern 'dbt_*'"),
                true,
                None
            ),
            (
                Some(1),
                Some("dbt_alice"),
                Some("m"),
                Some("pattern 'dbt_*'"),
                true,
                None
            ),
            (
                Some(2),
                Some("curated"),
                Some("m"),
                Some("schema 'curated'"),
                true,
                None
            ),
            (
                Some(3),
                Some("dbt_alice"),
                Some("x"),
                Some("pattern 'dbt_*'"),
                false,
                Some("'io_manager' wrote schema 'dbt_alice', owned by 'dbt'")
            ),
            (
                Some(4),
                Some("ci_1"),
                Some("m"),
                None,
                false,
                Some("'dbt' wrote schema 'ci_1', which srdp.toml does not name")
            ),
        ]
    );
}

#[test]
fn ducklakes_own_main_is_flagged_only_once_something_was_written_to_it() {
    let c = config("");
    let def = c.catalog("lake").unwrap();
    let live = ["main".to_string(), "raw".to_string()];
    let fresh = [
        v(ObjectKind::Schema, 0, "main", None, 0),
        v(ObjectKind::Schema, 1, "raw", None, 1),
        v(ObjectKind::Table, 2, "orders", Some(1), 1),
    ];
    assert_eq!(unnamed_schemas(&c, def, &live, &fresh), vec![]);
    let written = [
        fresh.as_slice(),
        &[v(ObjectKind::Table, 3, "t", Some(0), 2)],
    ]
    .concat();
    assert_eq!(
        unnamed_schemas(&c, def, &live, &written)
            .iter()
            .map(|r| (r.schema.as_deref(), r.note.as_deref()))
            .collect::<Vec<_>>(),
        vec![(
            Some("main"),
            Some(
                "no writer may write it while single_writer is on; define \
                 [catalogs.lake.schemas.main] with writer and layer, or drop it"
            )
        )]
    );
}

/// srdp's maintenance on `raw.orders` (table 3, owned by dlt): a flush of inline deletion markers
/// (`deleted_from_table` alone), a flush of rows and markers, a rewrite, a merge; then data
/// changes labelled `srdp`: a DELETE (rows changed at its snapshot), an insert, and a deletion
/// whose rows could not be checked.
fn maintenance_history() -> (Vec<Snapshot>, Vec<Version>) {
    let versions = vec![
        v(ObjectKind::Schema, 1, "raw", None, 1),
        v(ObjectKind::Table, 3, "orders", Some(1), 2),
    ];
    let snapshots = vec![
        snap(
            2,
            Some("dlt"),
            "created_table:\"raw\".\"orders\",inserted_into_table:3",
        ),
        snap(3, Some("dlt"), "inlined_delete:3"),
        snap(4, Some("srdp"), "deleted_from_table:3"),
        snap(5, Some("srdp"), "deleted_from_table:3,inline_flush:3"),
        snap(6, Some("srdp"), "rewrite_delete:3"),
        snap(7, Some("srdp"), "merge_adjacent:3"),
        snap(8, Some("srdp"), "deleted_from_table:3"),
        snap(9, Some("srdp"), "inlined_insert:3"),
        snap(10, Some("srdp"), "deleted_from_table:3"),
        snap(11, Some("dbt"), "deleted_from_table:3"),
    ];
    (snapshots, versions)
}

fn check(snapshot_id: i64) -> RowCheck {
    RowCheck {
        snapshot_id,
        schema: "raw".into(),
        table: "orders".into(),
    }
}

#[test]
fn lists_the_row_checks_of_deletions_authored_by_srdp_only() {
    let (snapshots, versions) = maintenance_history();
    let checks = row_checks(&snapshots, &versions, &Since::All).unwrap();
    assert_eq!(checks, [check(4), check(5), check(8), check(10)]);
    assert_eq!(
        row_checks(&snapshots, &versions, &Since::Snapshot(6)).unwrap(),
        [check(8), check(10)]
    );
    assert_eq!(
        RowCheck {
            snapshot_id: 12,
            schema: "it's".into(),
            table: "t".into()
        }
        .query("my lake"),
        "SELECT count(*) FROM ducklake_table_changes('my lake', 'it''s', 't', 12, 12)"
    );
}

#[test]
fn srdps_maintenance_is_allowed_and_a_data_change_labelled_srdp_is_not() {
    let config = config("");
    let def = config.catalog("lake").unwrap();
    let (snapshots, versions) = maintenance_history();
    let checked: RowChecks = [
        (check(4), Ok(0)),
        (check(5), Ok(0)),
        (check(8), Ok(41)),
        (check(10), Err("no such file".to_string())),
    ]
    .into_iter()
    .collect();
    let rows = audit(
        &config,
        def,
        &snapshots,
        &versions,
        &Since::Snapshot(4),
        &checked,
    )
    .unwrap();
    let markers = s("srdp maintenance: a flush wrote inline deletion markers to a delete file; no row changed in this snapshot");
    let unchanged = s("srdp maintenance; the rows are unchanged");
    let srdp_wrote = "'srdp' wrote schema 'raw', owned by 'dlt'";
    let row = |id: i64, author: &str, change: &str, allowed: bool, note: Option<String>| {
        (
            Some(id),
            s(author),
            s("raw"),
            s("orders"),
            change.to_string(),
            s("dlt"),
            allowed,
            note,
        )
    };
    assert_eq!(
        flat(rows),
        vec![
            row(4, "srdp", "flushed", true, markers.clone()),
            row(5, "srdp", "flushed", true, markers),
            row(6, "srdp", "rewritten", true, unchanged.clone()),
            row(7, "srdp", "compacted", true, unchanged),
            row(8, "srdp", "deleted", false, s(srdp_wrote)),
            row(9, "srdp", "inserted", false, s(srdp_wrote)),
            row(
                10,
                "srdp",
                "deleted",
                false,
                Some(format!(
                    "{srdp_wrote} (srdp could not read whether rows changed in this snapshot, so \
                     it counts as a deletion: no such file)"
                ))
            ),
            row(
                11,
                "dbt",
                "deleted",
                false,
                s("'dbt' wrote schema 'raw', owned by 'dlt'")
            ),
        ]
    );
    // Without its check (none was run), srdp's deletion is judged as any deletion.
    let unchecked = audit(
        &config,
        def,
        &snapshots,
        &versions,
        &Since::Snapshot(4),
        &RowChecks::new(),
    )
    .unwrap();
    assert_eq!(
        (unchecked[0].change.as_str(), unchecked[0].allowed),
        ("deleted", false)
    );
}
