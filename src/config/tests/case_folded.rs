//! Schema and catalog names that DuckDB resolves to one object (ASCII case folded) are refused
//! when the file is read, naming the later key and the earlier one's line.

use super::{message, parse_at};

#[test]
fn two_schemas_one_name_apart_only_by_case_are_refused() {
    assert_eq!(
        message(
            "[catalogs.lake]\nmetadata = \"x\"\ndata_path = \"d\"\n\
             [catalogs.lake.schemas.raw]\nwriter = \"dlt\"\nlayer = \"raw\"\n\
             [catalogs.lake.schemas.Raw]\nwriter = \"io_manager\"\nlayer = \"raw\"\n"
        ),
        "/etc/srdp/srdp.toml:7: key 'catalogs.lake.schemas.Raw': schema \"Raw\" of catalog 'lake' \
         differs only by case from schema \"raw\" (line 4); DuckDB resolves both names to one \
         schema, so their writers would write the same tables. Keep one of \
         [catalogs.lake.schemas.Raw] and [catalogs.lake.schemas.raw], or rename one"
    );
}

#[test]
fn the_later_table_in_the_file_is_the_one_named() {
    // "RAW" sorts before "raw", but "raw" comes later in the file.
    assert_eq!(
        message(
            "[catalogs.lake]\nmetadata = \"x\"\ndata_path = \"d\"\n\
             [catalogs.lake.schemas.RAW]\nwriter = \"dbt\"\nlayer = \"curated\"\n\
             [catalogs.lake.schemas.curated]\nwriter = \"dbt\"\nlayer = \"curated\"\n\
             [catalogs.lake.schemas.raw]\nwriter = \"dlt\"\nlayer = \"raw\"\n"
        ),
        "/etc/srdp/srdp.toml:10: key 'catalogs.lake.schemas.raw': schema \"raw\" of catalog 'lake' \
         differs only by case from schema \"RAW\" (line 4); DuckDB resolves both names to one \
         schema, so their writers would write the same tables. Keep one of \
         [catalogs.lake.schemas.raw] and [catalogs.lake.schemas.RAW], or rename one"
    );
}

#[test]
fn two_catalogs_one_name_apart_only_by_case_are_refused() {
    assert_eq!(
        message(
            "[catalogs.lake]\nmetadata = \"x\"\ndata_path = \"d\"\n\n\
             [catalogs.LAKE]\nmetadata = \"y\"\ndata_path = \"e\"\n"
        ),
        "/etc/srdp/srdp.toml:5: key 'catalogs.LAKE': catalog \"LAKE\" differs only by case from \
         catalog \"lake\" (line 1); DuckDB attaches both under one database name. Keep one of \
         [catalogs.LAKE] and [catalogs.lake], or rename one"
    );
}

#[test]
fn non_ascii_letters_are_not_folded_and_schemas_in_two_catalogs_may_share_a_name() {
    let config = parse_at(
        "[catalogs.a]\nmetadata = \"x\"\ndata_path = \"d\"\n\
         [catalogs.a.schemas.\"Ä\"]\nwriter = \"dbt\"\nlayer = \"curated\"\n\
         [catalogs.a.schemas.\"ä\"]\nwriter = \"io_manager\"\nlayer = \"serving\"\n\
         [catalogs.b]\nmetadata = \"y\"\ndata_path = \"e\"\n\
         [catalogs.b.schemas.RAW]\nwriter = \"dlt\"\nlayer = \"raw\"\n\
         [catalogs.a.schemas.raw]\nwriter = \"dlt\"\nlayer = \"raw\"\n",
    )
    .unwrap();
    let a = config.catalog("a").unwrap();
    assert_eq!(a.schemas.len(), 3);
    assert_eq!(
        a.schema("Ä").map(|(n, s)| (n, s.layer.as_str())),
        Some(("Ä", "curated"))
    );
    assert_eq!(
        a.schema("ä").map(|(n, s)| (n, s.layer.as_str())),
        Some(("ä", "serving"))
    );
    assert_eq!(a.schema("Raw").map(|(n, _)| n), Some("raw"));
    assert_eq!(a.schema("raw_"), None);
}

#[test]
fn promote_into_resolves_to_the_defined_spelling() {
    let config = parse_at(
        "[catalogs.lake]\nmetadata = \"x\"\ndata_path = \"d\"\nlanding_path = \"l\"\n\
         promote_into = \"Raw_Landed\"\n\
         [catalogs.lake.schemas.raw_landed]\nwriter = \"io_manager\"\nlayer = \"raw\"\n",
    )
    .unwrap();
    assert_eq!(
        config.catalog("lake").unwrap().promote_into.as_deref(),
        Some("raw_landed")
    );
}
