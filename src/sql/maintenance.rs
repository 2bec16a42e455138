//! The statements of srdp's maintenance steps: DuckLake's flush, merge and rewrite calls, the
//! commit label, the `auto_compact` bracket and the guard's delete.

use super::{Ident, Literal};

/// Flushes one dataset's inlined rows; returns the physical rows flushed as one BIGINT.
pub fn flush(alias: &Literal, schema: &Literal, table: &Literal) -> String {
    format!(
        "SELECT COALESCE(sum(rows_flushed), 0)::BIGINT \
         FROM ducklake_flush_inlined_data({alias}, schema_name => {schema}, table_name => {table})"
    )
}

/// Deletes rows of one dataset by DuckLake row id.
pub fn delete_row_ids(alias: &Ident, schema: &Ident, table: &Ident, row_ids: &[i64]) -> String {
    let ids: Vec<String> = row_ids.iter().map(i64::to_string).collect();
    format!(
        "DELETE FROM {alias}.{schema}.{table} WHERE rowid IN ({})",
        ids.join(", ")
    )
}

/// Sets the commit author and message of the open transaction on lake `alias`.
pub fn set_commit_message(alias: &Ident, author: &Literal, message: &Literal) -> String {
    format!("CALL {alias}.set_commit_message({author}, {message})")
}

/// Sets the `auto_compact` option of lake `alias` at one scope: the table `schema.table`, the
/// schema `schema`, or the whole catalog.
pub fn set_auto_compact(
    alias: &Ident,
    value: bool,
    scope: crate::plan::OptionScope,
    schema: &Literal,
    table: &Literal,
) -> String {
    use crate::plan::OptionScope;
    let target = match scope {
        OptionScope::Table => format!(", schema => {schema}, table_name => {table}"),
        OptionScope::Schema => format!(", schema => {schema}"),
        OptionScope::Catalog => String::new(),
    };
    format!("CALL {alias}.set_option('auto_compact', {value}{target})")
}

/// Merges one dataset's adjacent small files; returns `files_processed, files_created`.
pub fn merge(alias: &Literal, schema: &Literal, table: &Literal) -> String {
    format!(
        "SELECT COALESCE(sum(files_processed), 0)::BIGINT, COALESCE(sum(files_created), 0)::BIGINT \
         FROM ducklake_merge_adjacent_files({alias}, {table}, schema => {schema})"
    )
}

/// One bounded merge call ([`crate::maintenance::batched`]): at most `commands` output files,
/// from input files under `max_file_size` bytes (`None`: under the target file size); returns
/// `files_processed, files_created`.
pub fn merge_batch(
    alias: &Literal,
    schema: &Literal,
    table: &Literal,
    commands: u64,
    max_file_size: Option<u64>,
) -> String {
    let below = max_file_size.map_or(String::new(), |s| format!(", max_file_size => {s}"));
    format!(
        "SELECT COALESCE(sum(files_processed), 0)::BIGINT, COALESCE(sum(files_created), 0)::BIGINT \
         FROM ducklake_merge_adjacent_files({alias}, {table}, schema => {schema}, \
         max_compacted_files => {commands}{below})"
    )
}

/// Rewrites the files of one dataset whose deleted share is at least `threshold`, without their
/// deleted rows; returns `files_processed, files_created`. The threshold goes in as text cast to
/// DOUBLE, so it arrives as exactly the double srdp computed.
pub fn rewrite(alias: &Literal, schema: &Literal, table: &Literal, threshold: f64) -> String {
    format!(
        "SELECT COALESCE(sum(files_processed), 0)::BIGINT, COALESCE(sum(files_created), 0)::BIGINT \
         FROM ducklake_rewrite_data_files({alias}, {table}, schema => {schema}, delete_threshold => '{threshold}'::DOUBLE)"
    )
}

/// The row ids of the rows at `positions` of one data file (named by the last segment of its
/// path), read at `snapshot`: `file_row_number, rowid`. The guard maps inline deletion markers
/// (file, position) of a file that stores its row ids back to row ids with it.
pub fn row_ids_at_positions(
    alias: &Ident,
    schema: &Ident,
    table: &Ident,
    snapshot: i64,
    file_name: &Literal,
    positions: &[i64],
) -> String {
    let positions: Vec<String> = positions.iter().map(i64::to_string).collect();
    format!(
        "SELECT file_row_number, rowid FROM {alias}.{schema}.{table} AT (VERSION => {snapshot}) \
         WHERE parse_filename(filename) = {file_name} AND file_row_number IN ({})",
        positions.join(", ")
    )
}

/// Which of `row_ids` the dataset still holds.
pub fn live_row_ids(alias: &Ident, schema: &Ident, table: &Ident, row_ids: &[i64]) -> String {
    let ids: Vec<String> = row_ids.iter().map(i64::to_string).collect();
    format!(
        "SELECT rowid FROM {alias}.{schema}.{table} WHERE rowid IN ({})",
        ids.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_bounded_merge_queries() {
        let (alias, schema, table) = (Literal::new("l"), Literal::new("r'aw"), Literal::new("t"));
        assert_eq!(
            merge_batch(&alias, &schema, &table, 1, Some(16384)),
            "SELECT COALESCE(sum(files_processed), 0)::BIGINT, COALESCE(sum(files_created), 0)::BIGINT \
             FROM ducklake_merge_adjacent_files('l', 't', schema => 'r''aw', max_compacted_files => 1, max_file_size => 16384)"
        );
        assert_eq!(
            merge_batch(&alias, &schema, &table, 3, None),
            "SELECT COALESCE(sum(files_processed), 0)::BIGINT, COALESCE(sum(files_created), 0)::BIGINT \
             FROM ducklake_merge_adjacent_files('l', 't', schema => 'r''aw', max_compacted_files => 3)"
        );
    }

    #[test]
    fn builds_rewrites() {
        let (a, s, t) = (
            Literal::new("lake"),
            Literal::new("cur"),
            Literal::new("it's"),
        );
        assert_eq!(
            rewrite(&a, &s, &t, 0.30000000000000004),
            "SELECT COALESCE(sum(files_processed), 0)::BIGINT, COALESCE(sum(files_created), 0)::BIGINT \
             FROM ducklake_rewrite_data_files('lake', 'it''s', schema => 'cur', delete_threshold => '0.30000000000000004'::DOUBLE)"
        );
        assert!(rewrite(&a, &s, &t, 0.00001).ends_with("delete_threshold => '0.00001'::DOUBLE)"));
    }

    #[test]
    fn builds_the_guards_reads() {
        let (l, s, t) = (Ident::new("l"), Ident::new("raw"), Ident::new("t\"x"));
        assert_eq!(
            row_ids_at_positions(&l, &s, &t, 12, &Literal::new("ducklake-1.parquet"), &[3, 9]),
            "SELECT file_row_number, rowid FROM \"l\".\"raw\".\"t\"\"x\" AT (VERSION => 12) \
             WHERE parse_filename(filename) = 'ducklake-1.parquet' AND file_row_number IN (3, 9)"
        );
        assert_eq!(
            live_row_ids(&l, &s, &t, &[4, 5]),
            "SELECT rowid FROM \"l\".\"raw\".\"t\"\"x\" WHERE rowid IN (4, 5)"
        );
    }

    #[test]
    fn builds_lost_delete_deletes() {
        assert_eq!(
            delete_row_ids(
                &Ident::new("l"),
                &Ident::new("raw"),
                &Ident::new("t"),
                &[7, 60]
            ),
            "DELETE FROM \"l\".\"raw\".\"t\" WHERE rowid IN (7, 60)"
        );
    }

    #[test]
    fn builds_maintenance_calls() {
        let (a, s, t) = (
            Literal::new("lake"),
            Literal::new("raw"),
            Literal::new("it's"),
        );
        assert_eq!(
            flush(&a, &s, &t),
            "SELECT COALESCE(sum(rows_flushed), 0)::BIGINT FROM ducklake_flush_inlined_data('lake', schema_name => 'raw', table_name => 'it''s')"
        );
        assert_eq!(
            set_commit_message(
                &Ident::new("l\"x"),
                &Literal::new("srdp"),
                &Literal::new("it's")
            ),
            "CALL \"l\"\"x\".set_commit_message('srdp', 'it''s')"
        );
        let (l, sch, tab) = (Ident::new("l"), Literal::new("raw"), Literal::new("it's"));
        assert_eq!(
            set_auto_compact(&l, true, crate::plan::OptionScope::Table, &sch, &tab),
            "CALL \"l\".set_option('auto_compact', true, schema => 'raw', table_name => 'it''s')"
        );
        assert_eq!(
            set_auto_compact(&l, false, crate::plan::OptionScope::Schema, &sch, &tab),
            "CALL \"l\".set_option('auto_compact', false, schema => 'raw')"
        );
        assert_eq!(
            set_auto_compact(&l, true, crate::plan::OptionScope::Catalog, &sch, &tab),
            "CALL \"l\".set_option('auto_compact', true)"
        );
        assert_eq!(
            merge(&a, &s, &t),
            "SELECT COALESCE(sum(files_processed), 0)::BIGINT, COALESCE(sum(files_created), 0)::BIGINT FROM ducklake_merge_adjacent_files('lake', 'it''s', schema => 'raw')"
        );
    }
}
