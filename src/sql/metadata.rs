//! Reads of DuckLake's metadata tables (planning reads, counts, the guard's reads).

use super::{metadata_catalog, Ident, Literal};

/// The error [`MetadataTables::no_markers_on_live_files`] raises.
pub const MARKERS_ARRIVED: &str = "srdp: inline deletion markers arrived before the rewrite";

/// The most tables one union run by the catalog database counts (SQLite's limit is 500 terms).
pub const UNION_TERMS: usize = 250;

/// `1, 2, 3`
fn id_list(ids: &[i64]) -> String {
    ids.iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `"<metadata catalog>"."<metadata schema>".<table>`
pub struct MetadataTables {
    prefix: String,
}

impl MetadataTables {
    pub fn new(alias: &str, metadata_schema: &str) -> Self {
        MetadataTables {
            prefix: format!(
                "{}.{}",
                metadata_catalog(alias),
                Ident::new(metadata_schema)
            ),
        }
    }

    fn table(&self, name: &str) -> String {
        format!("{}.{}", self.prefix, Ident::new(name))
    }

    /// The first read of a maintenance or counting call, in one query: rows of `kind, id1,
    /// text1, id2, text2`, in no particular order:
    /// * `dataset`: `schema_id, schema_name, table_id, table_name` of each live table;
    /// * `schema`: `NULL, schema_name` of each live schema;
    /// * `inlined`: `NULL, NULL, table_id, table_name` of DuckLake 1.0's registry of inlined
    ///   insertion tables;
    /// * `auto_compact`, `target_file_size`, `rewrite_delete_threshold`: `scope_id, scope, NULL,
    ///   value` of each such option;
    /// * `latest`: `NULL, NULL, max(snapshot_id)`.
    pub fn listing(&self) -> String {
        format!(
            "SELECT 'dataset' AS kind, s.schema_id AS id1, s.schema_name AS text1, t.table_id AS id2, t.table_name AS text2 \
             FROM {table} t JOIN {schema} s ON t.schema_id = s.schema_id \
             WHERE t.end_snapshot IS NULL AND s.end_snapshot IS NULL \
             UNION ALL SELECT 'schema', NULL, schema_name, NULL, NULL FROM {schema} WHERE end_snapshot IS NULL \
             UNION ALL SELECT 'inlined', NULL, NULL, table_id, table_name FROM {inlined} \
             UNION ALL SELECT key, scope_id, scope, NULL, value FROM {metadata} \
             WHERE key IN ('auto_compact', 'target_file_size', 'rewrite_delete_threshold') \
             UNION ALL SELECT 'latest', NULL, NULL, max(snapshot_id), NULL FROM {snapshot}",
            table = self.table("ducklake_table"),
            schema = self.table("ducklake_schema"),
            inlined = self.table("ducklake_inlined_data_tables"),
            metadata = self.table("ducklake_metadata"),
            snapshot = self.table("ducklake_snapshot"),
        )
    }

    /// Live schema names, in order.
    pub fn schemas(&self) -> String {
        format!(
            "SELECT schema_name FROM {} WHERE end_snapshot IS NULL ORDER BY schema_name",
            self.table("ducklake_schema")
        )
    }

    /// DuckLake 1.0's registry of inlined insertion tables: `table_id, table_name`.
    pub fn inlined_registry(&self) -> String {
        format!(
            "SELECT table_id, table_name FROM {} ORDER BY table_id, schema_version",
            self.table("ducklake_inlined_data_tables")
        )
    }

    /// Physical rows of each registered inlined table: `table_id, n, ended`, one row per table.
    /// Every row is an insertion record (live, deleted or superseded: `ended` counts those two,
    /// whose flush writes a delete file for the new file); inline deletion markers live in
    /// `ducklake_inlined_delete_<id>`, which is never registered.
    pub fn inlined_counts(&self, tables: &[(i64, String)]) -> String {
        if tables.is_empty() {
            return "SELECT NULL::BIGINT AS table_id, 0::BIGINT AS n, 0::BIGINT AS ended WHERE false"
                .to_string();
        }
        tables
            .iter()
            .map(|(id, name)| {
                format!(
                    "SELECT {id}::BIGINT AS table_id, count(*)::BIGINT AS n, \
                     count(end_snapshot)::BIGINT AS ended FROM {}",
                    self.table(name)
                )
            })
            .collect::<Vec<_>>()
            .join(" UNION ALL ")
    }

    /// [`MetadataTables::inlined_counts`] run by the catalog database itself: DuckDB binds each
    /// table of a union through its SQLite or PostgreSQL catalog (2-8 ms each on SQLite), the
    /// database runs the whole union in a few milliseconds. `function` is `sqlite_query` (a
    /// SQLite catalog's tables are in its `main`, `schema` is `None`) or `postgres_query` (the
    /// tables are in `schema`); `metadata_db` is DuckDB's name of the metadata database. `None`
    /// without tables.
    pub fn inlined_counts_in_catalog_db(
        function: &str,
        metadata_db: &str,
        schema: Option<&str>,
        tables: &[(i64, String)],
    ) -> Option<String> {
        if tables.is_empty() {
            return None;
        }
        let prefix = schema.map_or(String::new(), |s| format!("{}.", Ident::new(s)));
        // SQLite allows at most 500 terms in one compound SELECT (SQLITE_MAX_COMPOUND_SELECT).
        let calls = tables
            .chunks(UNION_TERMS)
            .map(|chunk| {
                let union = chunk
                    .iter()
                    .map(|(id, name)| {
                        format!(
                            "SELECT {id} AS table_id, count(*) AS n, count(end_snapshot) AS ended \
                             FROM {prefix}{}",
                            Ident::new(name)
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(" UNION ALL ");
                format!(
                    "SELECT table_id::BIGINT AS table_id, n::BIGINT AS n, ended::BIGINT AS ended \
                     FROM {function}({}, {})",
                    Literal::new(metadata_db),
                    Literal::new(&union)
                )
            })
            .collect::<Vec<_>>();
        Some(calls.join(" UNION ALL "))
    }

    /// Live data files of one table.
    pub fn live_files_of(&self, table_id: i64) -> String {
        format!(
            "SELECT count(*)::BIGINT FROM {} WHERE table_id = {table_id} AND end_snapshot IS NULL",
            self.table("ducklake_data_file")
        )
    }

    /// One read for every table of the catalog: `table_id, files, mergeable, small` where `files`
    /// is the live data files, `small` those under `target_bytes` and `mergeable` the most of
    /// them that share a partition (`partition_id` and partition values). DuckLake's merge needs two such files in
    /// one group (it also splits groups by schema version and leaves out files with deletes,
    /// which only makes its groups smaller), so `mergeable < 2` proves it has nothing to merge.
    /// `tables`: only these table ids (a call on a few datasets reads only their files).
    pub fn merge_plan(&self, target_bytes: u64, tables: Option<&[i64]>) -> String {
        let only = match tables {
            None => String::new(),
            // A lake with no tables: `IN ()` is a syntax error, and there is nothing to read.
            Some([]) => " AND false".to_string(),
            Some(ids) => format!(" AND table_id IN ({})", id_list(ids)),
        };
        format!(
            "WITH live AS (SELECT table_id, data_file_id, partition_id, file_size_bytes FROM {} \
             WHERE end_snapshot IS NULL{only}), \
             parts AS (SELECT p.data_file_id, string_agg(coalesce(p.partition_value, chr(0)), chr(31) \
             ORDER BY p.partition_key_index) AS vals FROM {} p JOIN live USING (data_file_id) \
             GROUP BY p.data_file_id), \
             groups AS (SELECT live.table_id, count(*) AS files, \
             count(*) FILTER (WHERE live.file_size_bytes < {target_bytes}) AS small \
             FROM live LEFT JOIN parts USING (data_file_id) \
             GROUP BY live.table_id, live.partition_id, parts.vals) \
             SELECT table_id, sum(files)::BIGINT, max(small)::BIGINT, sum(small)::BIGINT FROM groups GROUP BY table_id",
            self.table("ducklake_data_file"),
            self.table("ducklake_file_partition_value")
        )
    }

    /// The `changes_made` of every snapshot after `snapshot_id` that flushed inlined data.
    pub fn inline_flushes_since(&self, snapshot_id: i64) -> String {
        format!(
            "SELECT changes_made FROM {} WHERE snapshot_id > {snapshot_id} AND changes_made LIKE '%inline_flush:%'",
            self.table("ducklake_snapshot_changes")
        )
    }

    /// The `changes_made` of every snapshot that made inline deletion markers.
    pub fn inline_deletion_changes(&self) -> String {
        format!(
            "SELECT changes_made FROM {} WHERE changes_made LIKE '%inlined_delete:%'",
            self.table("ducklake_snapshot_changes")
        )
    }

    /// Inline deletion markers per data file: `table_id, file_id, markers`, one row per file
    /// with markers, over the marker tables of `table_ids` (DuckDB runs the union; see
    /// [`MetadataTables::marker_counts_in_catalog_db`]).
    pub fn marker_counts(&self, table_ids: &[i64]) -> String {
        if table_ids.is_empty() {
            return "SELECT NULL::BIGINT AS table_id, NULL::BIGINT AS file_id, 0::BIGINT AS n WHERE false"
                .to_string();
        }
        table_ids
            .iter()
            .map(|id| {
                format!(
                    "SELECT {id}::BIGINT AS table_id, file_id::BIGINT AS file_id, count(*)::BIGINT AS n FROM {} GROUP BY file_id",
                    self.table(&format!("ducklake_inlined_delete_{id}"))
                )
            })
            .collect::<Vec<_>>()
            .join(" UNION ALL ")
    }

    /// [`MetadataTables::marker_counts`] run by the catalog database itself (as
    /// [`MetadataTables::inlined_counts_in_catalog_db`] does for inlined rows); `None` without
    /// tables.
    pub fn marker_counts_in_catalog_db(
        function: &str,
        metadata_db: &str,
        schema: Option<&str>,
        table_ids: &[i64],
    ) -> Option<String> {
        if table_ids.is_empty() {
            return None;
        }
        let prefix = schema.map_or(String::new(), |s| format!("{}.", Ident::new(s)));
        let calls = table_ids
            .chunks(UNION_TERMS)
            .map(|chunk| {
                let union = chunk
                    .iter()
                    .map(|id| {
                        format!(
                            "SELECT {id} AS table_id, file_id, count(*) AS n FROM {prefix}{} GROUP BY file_id",
                            Ident::new(&format!("ducklake_inlined_delete_{id}"))
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(" UNION ALL ");
                format!(
                    "SELECT table_id::BIGINT AS table_id, file_id::BIGINT AS file_id, n::BIGINT AS n FROM {function}({}, {})",
                    Literal::new(metadata_db),
                    Literal::new(&union)
                )
            })
            .collect::<Vec<_>>();
        Some(calls.join(" UNION ALL "))
    }

    /// The live data files that carry deletes: `table_id, data_file_id, record_count,
    /// file_size_bytes, deleted` where `deleted` is the delete count of the file's live delete
    /// file (0 without one). Files with a live delete file, and the files `marked` (those with
    /// inline deletion markers, counted apart); `tables`: only these table ids, as in
    /// [`MetadataTables::merge_plan`].
    pub fn delete_backlog(&self, tables: Option<&[i64]>, marked: &[i64]) -> String {
        let only = match tables {
            None => String::new(),
            Some([]) => " AND false".to_string(),
            Some(ids) => format!(" AND d.table_id IN ({})", id_list(ids)),
        };
        let marked = if marked.is_empty() {
            String::new()
        } else {
            format!(" OR d.data_file_id IN ({})", id_list(marked))
        };
        format!(
            "SELECT d.table_id, d.data_file_id, d.record_count, d.file_size_bytes, \
             COALESCE(max(x.delete_count), 0)::BIGINT FROM {} d LEFT JOIN {} x \
             ON x.data_file_id = d.data_file_id AND x.end_snapshot IS NULL \
             WHERE d.end_snapshot IS NULL{only} AND (x.data_file_id IS NOT NULL{marked}) \
             GROUP BY d.table_id, d.data_file_id, d.record_count, d.file_size_bytes",
            self.table("ducklake_data_file"),
            self.table("ducklake_delete_file")
        )
    }

    /// Fails with [`MARKERS_ARRIVED`] when table `table_id` has inline deletion markers on live
    /// files: run in a rewrite's transaction right before the rewrite (see
    /// `maintenance::rewrite`).
    pub fn no_markers_on_live_files(&self, table_id: i64) -> String {
        format!(
            "SELECT CASE WHEN count(*) > 0 THEN error({}) END FROM {} m JOIN {} d \
             ON d.data_file_id = m.file_id AND d.end_snapshot IS NULL",
            Literal::new(MARKERS_ARRIVED),
            self.table(&format!("ducklake_inlined_delete_{table_id}")),
            self.table("ducklake_data_file")
        )
    }

    /// Inline deletion markers per table: `table_id, markers`, one row per given table id.
    pub fn inline_deletion_counts(&self, table_ids: &[i64]) -> String {
        if table_ids.is_empty() {
            return "SELECT NULL::BIGINT AS table_id, 0::BIGINT AS n WHERE false".to_string();
        }
        table_ids
            .iter()
            .map(|id| {
                format!(
                    "SELECT {id}::BIGINT AS table_id, count(*)::BIGINT AS n FROM {}",
                    self.table(&format!("ducklake_inlined_delete_{id}"))
                )
            })
            .collect::<Vec<_>>()
            .join(" UNION ALL ")
    }

    /// Live data files of one table under `below_bytes`: `count, total bytes`.
    pub fn small_files_of(&self, table_id: i64, below_bytes: u64) -> String {
        format!(
            "SELECT count(*)::BIGINT, COALESCE(sum(file_size_bytes), 0)::BIGINT FROM {} \
             WHERE table_id = {table_id} AND end_snapshot IS NULL AND file_size_bytes < {below_bytes}",
            self.table("ducklake_data_file")
        )
    }

    /// Live data files of one table with what the guard needs to map a position in each back to
    /// a row id: `data_file_id, row_id_start, path, begin_snapshot`.
    pub fn live_file_row_starts(&self, table_id: i64) -> String {
        format!(
            "SELECT data_file_id, row_id_start, path, begin_snapshot FROM {} WHERE table_id = {table_id} AND end_snapshot IS NULL",
            self.table("ducklake_data_file")
        )
    }

    /// Data files of one table by id, live or retired (a retired file's row stays while time travel
    /// needs it): `data_file_id, row_id_start, path, begin_snapshot`.
    pub fn data_files_by_id(&self, table_id: i64, ids: &[i64]) -> String {
        let ids = if ids.is_empty() {
            "NULL".to_string()
        } else {
            id_list(ids)
        };
        format!(
            "SELECT data_file_id, row_id_start, path, begin_snapshot FROM {} WHERE table_id = {table_id} AND data_file_id IN ({ids})",
            self.table("ducklake_data_file")
        )
    }

    /// Inline deletion markers of one table: `file_id, row_id` (row position in that file).
    /// The table exists only once the table had a small delete against a Parquet file.
    pub fn inline_deletions(&self, table_id: i64) -> String {
        format!(
            "SELECT file_id, row_id FROM {}",
            self.table(&format!("ducklake_inlined_delete_{table_id}"))
        )
    }

    /// The latest snapshot id.
    pub fn latest_snapshot(&self) -> String {
        format!(
            "SELECT max(snapshot_id) FROM {}",
            self.table("ducklake_snapshot")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_metadata_queries() {
        let m = MetadataTables::new("my lake", "main");
        assert_eq!(
            m.inlined_counts(&[(1, "ducklake_inlined_data_1_1".into()), (2, "x\"y".into())]),
            "SELECT 1::BIGINT AS table_id, count(*)::BIGINT AS n, count(end_snapshot)::BIGINT AS ended \
             FROM \"__ducklake_metadata_my lake\".\"main\".\"ducklake_inlined_data_1_1\" \
             UNION ALL SELECT 2::BIGINT AS table_id, count(*)::BIGINT AS n, count(end_snapshot)::BIGINT AS ended \
             FROM \"__ducklake_metadata_my lake\".\"main\".\"x\"\"y\""
        );
        assert_eq!(
            m.inlined_counts(&[]),
            "SELECT NULL::BIGINT AS table_id, 0::BIGINT AS n, 0::BIGINT AS ended WHERE false"
        );
        let m = MetadataTables::new("l", "meta");
        assert_eq!(
            m.inline_deletion_counts(&[4, 9]),
            "SELECT 4::BIGINT AS table_id, count(*)::BIGINT AS n FROM \"__ducklake_metadata_l\".\"meta\".\"ducklake_inlined_delete_4\" \
             UNION ALL SELECT 9::BIGINT AS table_id, count(*)::BIGINT AS n FROM \"__ducklake_metadata_l\".\"meta\".\"ducklake_inlined_delete_9\""
        );
        assert_eq!(
            m.inline_deletion_counts(&[]),
            "SELECT NULL::BIGINT AS table_id, 0::BIGINT AS n WHERE false"
        );
        assert_eq!(
            m.listing(),
            "SELECT 'dataset' AS kind, s.schema_id AS id1, s.schema_name AS text1, t.table_id AS id2, t.table_name AS text2 \
             FROM \"__ducklake_metadata_l\".\"meta\".\"ducklake_table\" t JOIN \"__ducklake_metadata_l\".\"meta\".\"ducklake_schema\" s ON t.schema_id = s.schema_id \
             WHERE t.end_snapshot IS NULL AND s.end_snapshot IS NULL \
             UNION ALL SELECT 'schema', NULL, schema_name, NULL, NULL FROM \"__ducklake_metadata_l\".\"meta\".\"ducklake_schema\" WHERE end_snapshot IS NULL \
             UNION ALL SELECT 'inlined', NULL, NULL, table_id, table_name FROM \"__ducklake_metadata_l\".\"meta\".\"ducklake_inlined_data_tables\" \
             UNION ALL SELECT key, scope_id, scope, NULL, value FROM \"__ducklake_metadata_l\".\"meta\".\"ducklake_metadata\" \
             WHERE key IN ('auto_compact', 'target_file_size', 'rewrite_delete_threshold') \
             UNION ALL SELECT 'latest', NULL, NULL, max(snapshot_id), NULL FROM \"__ducklake_metadata_l\".\"meta\".\"ducklake_snapshot\""
        );
        assert_eq!(
            m.latest_snapshot(),
            "SELECT max(snapshot_id) FROM \"__ducklake_metadata_l\".\"meta\".\"ducklake_snapshot\""
        );
        assert_eq!(
            m.inline_flushes_since(7),
            "SELECT changes_made FROM \"__ducklake_metadata_l\".\"meta\".\"ducklake_snapshot_changes\" WHERE snapshot_id > 7 AND changes_made LIKE '%inline_flush:%'"
        );
        assert_eq!(
            m.inline_deletion_changes(),
            "SELECT changes_made FROM \"__ducklake_metadata_l\".\"meta\".\"ducklake_snapshot_changes\" WHERE changes_made LIKE '%inlined_delete:%'"
        );
        assert_eq!(
            m.merge_plan(100, None),
            "WITH live AS (SELECT table_id, data_file_id, partition_id, file_size_bytes FROM \"__ducklake_metadata_l\".\"meta\".\"ducklake_data_file\" \
             WHERE end_snapshot IS NULL), \
             parts AS (SELECT p.data_file_id, string_agg(coalesce(p.partition_value, chr(0)), chr(31) \
             ORDER BY p.partition_key_index) AS vals FROM \"__ducklake_metadata_l\".\"meta\".\"ducklake_file_partition_value\" p JOIN live USING (data_file_id) \
             GROUP BY p.data_file_id), \
             groups AS (SELECT live.table_id, count(*) AS files, \
             count(*) FILTER (WHERE live.file_size_bytes < 100) AS small \
             FROM live LEFT JOIN parts USING (data_file_id) \
             GROUP BY live.table_id, live.partition_id, parts.vals) \
             SELECT table_id, sum(files)::BIGINT, max(small)::BIGINT, sum(small)::BIGINT FROM groups GROUP BY table_id"
        );
        assert!(m
            .merge_plan(100, Some(&[3, 5]))
            .contains("WHERE end_snapshot IS NULL AND table_id IN (3, 5)), "));
        assert!(m
            .merge_plan(100, Some(&[]))
            .contains("WHERE end_snapshot IS NULL AND false), "));
        assert_eq!(
            MetadataTables::new("l", "meta").live_files_of(3),
            "SELECT count(*)::BIGINT FROM \"__ducklake_metadata_l\".\"meta\".\"ducklake_data_file\" WHERE table_id = 3 AND end_snapshot IS NULL"
        );
    }

    #[test]
    fn builds_the_inlined_count_sqlite_runs() {
        assert_eq!(
            MetadataTables::inlined_counts_in_catalog_db(
                "sqlite_query",
                "__ducklake_metadata_l",
                None,
                &[(3, "ducklake_inlined_data_3_1".into()), (5, "it's \"x\"".into())]
            )
            .unwrap(),
            "SELECT table_id::BIGINT AS table_id, n::BIGINT AS n, ended::BIGINT AS ended \
             FROM sqlite_query('__ducklake_metadata_l', \
             'SELECT 3 AS table_id, count(*) AS n, count(end_snapshot) AS ended FROM \"ducklake_inlined_data_3_1\" UNION ALL \
             SELECT 5 AS table_id, count(*) AS n, count(end_snapshot) AS ended FROM \"it''s \"\"x\"\"\"')"
        );
        assert_eq!(
            MetadataTables::inlined_counts_in_catalog_db(
                "postgres_query",
                "__ducklake_metadata_l",
                Some("m'eta"),
                &[(3, "t".into())]
            )
            .unwrap(),
            "SELECT table_id::BIGINT AS table_id, n::BIGINT AS n, ended::BIGINT AS ended \
             FROM postgres_query('__ducklake_metadata_l', \
             'SELECT 3 AS table_id, count(*) AS n, count(end_snapshot) AS ended FROM \"m''eta\".\"t\"')"
        );
        assert_eq!(
            MetadataTables::inlined_counts_in_catalog_db("sqlite_query", "m", None, &[]),
            None
        );
        // Over UNION_TERMS tables: one call per chunk, joined in DuckDB.
        let many: Vec<(i64, String)> = (0..600).map(|i| (i, format!("t{i}"))).collect();
        let query =
            MetadataTables::inlined_counts_in_catalog_db("sqlite_query", "m", None, &many).unwrap();
        assert_eq!(query.matches("FROM sqlite_query(").count(), 3);
        assert_eq!(query.matches("count(*)").count(), 600);
        assert!(query.contains("FROM \"t249\"') UNION ALL SELECT table_id::BIGINT"));
        assert_eq!(query.matches("count(end_snapshot)").count(), 600);
    }

    #[test]
    fn builds_the_delete_backlog_reads() {
        let m = MetadataTables::new("l", "meta");
        assert_eq!(
            m.marker_counts(&[4, 9]),
            "SELECT 4::BIGINT AS table_id, file_id::BIGINT AS file_id, count(*)::BIGINT AS n FROM \"__ducklake_metadata_l\".\"meta\".\"ducklake_inlined_delete_4\" GROUP BY file_id \
             UNION ALL SELECT 9::BIGINT AS table_id, file_id::BIGINT AS file_id, count(*)::BIGINT AS n FROM \"__ducklake_metadata_l\".\"meta\".\"ducklake_inlined_delete_9\" GROUP BY file_id"
        );
        assert_eq!(
            m.marker_counts(&[]),
            "SELECT NULL::BIGINT AS table_id, NULL::BIGINT AS file_id, 0::BIGINT AS n WHERE false"
        );
        assert_eq!(
            MetadataTables::marker_counts_in_catalog_db("postgres_query", "__ducklake_metadata_l", Some("m'eta"), &[3]).unwrap(),
            "SELECT table_id::BIGINT AS table_id, file_id::BIGINT AS file_id, n::BIGINT AS n FROM postgres_query('__ducklake_metadata_l', \
             'SELECT 3 AS table_id, file_id, count(*) AS n FROM \"m''eta\".\"ducklake_inlined_delete_3\" GROUP BY file_id')"
        );
        assert_eq!(
            MetadataTables::marker_counts_in_catalog_db("sqlite_query", "m", None, &[]),
            None
        );
        assert_eq!(
            m.delete_backlog(Some(&[2, 7]), &[11, 12]),
            "SELECT d.table_id, d.data_file_id, d.record_count, d.file_size_bytes, \
             COALESCE(max(x.delete_count), 0)::BIGINT FROM \"__ducklake_metadata_l\".\"meta\".\"ducklake_data_file\" d \
             LEFT JOIN \"__ducklake_metadata_l\".\"meta\".\"ducklake_delete_file\" x \
             ON x.data_file_id = d.data_file_id AND x.end_snapshot IS NULL \
             WHERE d.end_snapshot IS NULL AND d.table_id IN (2, 7) AND (x.data_file_id IS NOT NULL OR d.data_file_id IN (11, 12)) \
             GROUP BY d.table_id, d.data_file_id, d.record_count, d.file_size_bytes"
        );
        assert!(m
            .delete_backlog(None, &[])
            .contains("WHERE d.end_snapshot IS NULL AND (x.data_file_id IS NOT NULL) GROUP BY"));
        assert!(m
            .delete_backlog(Some(&[]), &[])
            .contains("WHERE d.end_snapshot IS NULL AND false AND (x.data_file_id"));
    }

    #[test]
    fn builds_the_rewrites_marker_check() {
        assert_eq!(
            MetadataTables::new("l", "main").no_markers_on_live_files(4),
            "SELECT CASE WHEN count(*) > 0 THEN error('srdp: inline deletion markers arrived before the rewrite') END \
             FROM \"__ducklake_metadata_l\".\"main\".\"ducklake_inlined_delete_4\" m \
             JOIN \"__ducklake_metadata_l\".\"main\".\"ducklake_data_file\" d \
             ON d.data_file_id = m.file_id AND d.end_snapshot IS NULL"
        );
    }

    #[test]
    fn builds_the_guards_file_lookup() {
        let m = MetadataTables::new("l", "main");
        assert_eq!(
            m.data_files_by_id(4, &[7, 9]),
            "SELECT data_file_id, row_id_start, path, begin_snapshot FROM \"__ducklake_metadata_l\".\"main\".\"ducklake_data_file\" \
             WHERE table_id = 4 AND data_file_id IN (7, 9)"
        );
        assert!(m
            .data_files_by_id(4, &[])
            .ends_with("data_file_id IN (NULL)"));
    }

    #[test]
    fn builds_small_file_counts() {
        let m = MetadataTables::new("l", "main");
        assert_eq!(
            m.small_files_of(4, 1048576),
            "SELECT count(*)::BIGINT, COALESCE(sum(file_size_bytes), 0)::BIGINT FROM \"__ducklake_metadata_l\".\"main\".\"ducklake_data_file\" \
             WHERE table_id = 4 AND end_snapshot IS NULL AND file_size_bytes < 1048576"
        );
    }

    #[test]
    fn builds_lost_delete_queries() {
        let m = MetadataTables::new("l", "main");
        assert_eq!(
            m.live_file_row_starts(4),
            "SELECT data_file_id, row_id_start, path, begin_snapshot FROM \"__ducklake_metadata_l\".\"main\".\"ducklake_data_file\" WHERE table_id = 4 AND end_snapshot IS NULL"
        );
        assert_eq!(
            m.inline_deletions(4),
            "SELECT file_id, row_id FROM \"__ducklake_metadata_l\".\"main\".\"ducklake_inlined_delete_4\""
        );
    }
}
