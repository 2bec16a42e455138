"""PostgreSQL catalogs with S3 data paths, against real servers (scripts/servers.py): attach from
srdp.toml with credentials only in DuckDB secrets, maintenance unchanged on object storage,
least-privilege roles enforced by PostgreSQL, metadata schemas kept apart, and errors that never
show a password.
"""

from __future__ import annotations

import duckdb
import pytest

from conftest import run_python, write_config
from lakecheck import Lake
from pg_lake import BUCKET, config_text, new_lake

ROWS = "SELECT count(*), sum(hash(id, v))::VARCHAR FROM lake.main.t"

# The metadata tables DuckLake 1.0 creates for a new lake.
DUCKLAKE_TABLES = [
    f"ducklake_{name}"
    for name in (
        "column", "column_mapping", "column_tag", "data_file", "delete_file", "file_column_stats",
        "file_partition_value", "file_variant_stats", "files_scheduled_for_deletion", "inlined_data_tables",
        "macro", "macro_impl", "macro_parameters", "metadata", "name_mapping", "partition_column",
        "partition_info", "schema", "schema_versions", "snapshot", "snapshot_changes", "sort_expression",
        "sort_info", "table", "table_column_stats", "table_stats", "tag", "view",
    )
]


def fill(con, table="lake.main.t", big=3, small=4):
    """``big`` Parquet batches of 2,000 rows, then ``small`` inlined batches of 5 rows."""
    con.execute(f"CREATE TABLE {table} (id BIGINT, v VARCHAR)")
    n = 0
    for _ in range(big):
        con.execute(f"INSERT INTO {table} SELECT {n} + range, 'big' || range FROM range(2000)")
        n += 2000
    for _ in range(small):
        con.execute(f"INSERT INTO {table} SELECT {n} + range, 'small' || range FROM range(5)")
        n += 5
    return n


def test_maintenance_on_postgres_and_s3_keeps_rows_snapshots_and_files(servers, tmp_path, connect):
    lake = new_lake(servers, tmp_path)
    con = lake.connect(connect)
    row = con.execute(
        "SELECT role, read_only, metadata_schema, data_path, status FROM srdp_attach_catalog('lake', role := 'writer')"
    ).fetchone()
    assert row == ("writer", False, "lake", lake.data_path, "attached")
    total = fill(con)
    # The metadata lives in PostgreSQL schema "lake" of that database, the data in the bucket.
    tables = servers.psql("SELECT tablename FROM pg_tables WHERE schemaname = 'lake' ORDER BY 1", lake.database).split()
    assert tables == sorted(DUCKLAKE_TABLES + ["ducklake_inlined_data_1_1"])
    # No other schema of the database holds DuckLake tables.
    assert servers.psql("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'ducklake%'", lake.database).strip() == str(len(tables))
    # The three Parquet files in the bucket are the three live files the metadata registers.
    live = Lake(con, meta="lake").live_files()
    assert sorted(lake.objects(con)) == live[("main", "t")] and len(live[("main", "t")]) == 3

    # Exact inlined count against an independent count over the metadata.
    independent = con.execute(
        "SELECT count(*) FROM __ducklake_metadata_lake.lake.ducklake_inlined_data_1_1"
    ).fetchone()[0]
    con.execute("CALL enable_logging('QueryLog')")
    assert con.execute("SELECT inlined_rows FROM srdp_inlined_row_count('lake')").fetchall() == [(independent,)] == [(20,)]
    logged = [r[0] for r in con.execute("SELECT message FROM duckdb_logs WHERE type = 'QueryLog'").fetchall()]
    con.execute("CALL disable_logging()")
    # PostgreSQL ran the count (postgres_query), not DuckDB's union over its catalog.
    assert [q for q in logged if "FROM postgres_query('__ducklake_metadata_lake'" in q]
    assert not [q for q in logged if 'AS n FROM "__ducklake_metadata_lake"."lake"."ducklake_inlined_data_' in q]

    before = con.execute(ROWS).fetchone()
    snapshot_before = con.execute("SELECT max(snapshot_id) FROM ducklake_snapshots('lake')").fetchone()[0]
    at_before = con.execute(f"SELECT count(*), sum(id) FROM lake.main.t AT (VERSION => {snapshot_before})").fetchone()
    objects_before = lake.objects(con)

    # Dry run: nothing changes.
    assert con.execute("SELECT status FROM srdp_compact('lake', dry_run := true)").fetchall() == [("planned",)]
    assert con.execute("SELECT max(snapshot_id) FROM ducklake_snapshots('lake')").fetchone()[0] == snapshot_before
    assert lake.objects(con) == objects_before

    rows = con.execute(
        "SELECT rows_flushed, files_before, files_after, files_processed, files_created, status FROM srdp_compact('lake')"
    ).fetchall()
    assert rows == [(20, 3, 1, 4, 1, "compacted")]  # files_before: before the flush added one
    assert con.execute(ROWS).fetchone() == before and before[0] == total
    # Counted from the metadata: one live file, nothing inlined.
    meta = Lake(con, meta="lake")
    assert meta.state() == {("main", "t"): (1, 0)}
    # Time travel still reads the old rows; no object was deleted from the bucket. The new ones
    # are the flushed file (retired by the merge) and the merged file (the one live file).
    assert con.execute(f"SELECT count(*), sum(id) FROM lake.main.t AT (VERSION => {snapshot_before})").fetchone() == at_before
    after_objects = lake.objects(con)
    assert set(objects_before) <= set(after_objects) and len(after_objects) == len(objects_before) + 2
    assert set(after_objects) == meta.registered_files()

    # A reader in another process, through the reader secret, sees the same rows.
    out = run_python(
        f"""
        import srdp
        con = srdp.connect(config={str(lake.cfg)!r})
        for s in {lake.setup_sql()!r}:
            con.execute(s)
        print(con.execute("SELECT read_only FROM srdp_attach_catalog('lake')").fetchone())
        print(con.execute({ROWS!r}).fetchone())
        """
    )
    assert out.splitlines() == ["(True,)", repr(before)]


def test_partitioned_table_never_merges_across_partitions(servers, tmp_path, connect):
    lake = new_lake(servers, tmp_path, extra="data_inlining_row_limit = 0")
    con = lake.connect(connect)
    con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
    con.execute("CREATE TABLE lake.main.p (id BIGINT, part VARCHAR)")
    con.execute("ALTER TABLE lake.main.p SET PARTITIONED BY (part)")
    for i in range(3):
        con.execute(f"INSERT INTO lake.main.p SELECT {i} * 100 + range, CASE WHEN range % 2 = 0 THEN 'a' ELSE 'b' END FROM range(100)")
    before = con.execute("SELECT count(*), sum(hash(id, part)) FROM lake.main.p").fetchone()
    (row,) = con.execute("SELECT files_before, files_after, status FROM srdp_compact('lake')").fetchall()
    assert row == (6, 2, "compacted")
    assert con.execute("SELECT count(*), sum(hash(id, part)) FROM lake.main.p").fetchone() == before
    # Each live file holds one partition only.
    per_file = con.execute(
        "SELECT list(DISTINCT v.partition_value ORDER BY v.partition_value) "
        "FROM __ducklake_metadata_lake.lake.ducklake_data_file f "
        "JOIN __ducklake_metadata_lake.lake.ducklake_file_partition_value v USING (data_file_id) "
        "WHERE f.end_snapshot IS NULL GROUP BY f.data_file_id ORDER BY 1"
    ).fetchall()
    assert per_file == [(["a"],), (["b"],)]
    assert Lake(con, meta="lake").file_counts() == {("main", "p"): 2}


def test_two_catalogs_in_one_database_stay_separate(servers, tmp_path, connect):
    lake = new_lake(servers, tmp_path)
    other = write_config(
        tmp_path / "other",
        config_text(servers, lake.database, "other_lake", lake.prefix + "-other").replace("[catalogs.lake]", "[catalogs.other]"),
    )
    con = lake.connect(connect)
    con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
    con.execute(f"SELECT * FROM srdp_attach_catalog('other', role := 'writer', config := '{other}')").fetchall()
    con.execute("CREATE TABLE lake.main.only_in_lake (i INT)")
    con.execute("CREATE TABLE other.main.only_in_other (i INT)")
    assert con.execute("SHOW TABLES FROM lake.main").fetchall() == [("only_in_lake",)]
    assert con.execute("SHOW TABLES FROM other.main").fetchall() == [("only_in_other",)]
    schemas = servers.psql(
        "SELECT DISTINCT schemaname FROM pg_tables WHERE tablename = 'ducklake_snapshot' ORDER BY 1", lake.database
    ).split()
    assert schemas == ["lake", "other_lake"]


def test_metadata_schema_ducklake_as_dlt_creates_it(servers, tmp_path, connect):
    """A lake created in schema "ducklake" (dlt's default) is found only with that schema."""
    lake = new_lake(servers, tmp_path)
    # Created the way dlt does it: plain DuckDB, METADATA_SCHEMA 'ducklake'.
    plain = duckdb.connect(config={"allow_unsigned_extensions": "true", **{k: v for k, v in __import__("srdp").duckdb_config().items()}})
    for s in lake.setup_sql():
        plain.execute(s)
    plain.execute(
        f"ATTACH 'ducklake:postgres:dbname={lake.database} host=127.0.0.1 port={servers.pg_port}' AS ducklake "
        f"(DATA_PATH '{lake.data_path}', METADATA_SCHEMA 'ducklake', META_SECRET 'pg_writer')"
    )
    plain.execute("CREATE SCHEMA ducklake.raw")
    plain.execute("CREATE TABLE ducklake.raw.events AS SELECT range AS id FROM range(7)")
    plain.close()

    found = write_config(
        tmp_path / "found",
        config_text(servers, lake.database, "ducklake", lake.prefix)
        + '[catalogs.lake.schemas.raw]\nwriter = "dlt"\nlayer = "raw"\n',
    )
    con = lake.connect(connect)
    con.execute(f"SET srdp_config = '{found}'")
    assert con.execute("SELECT status FROM srdp_attach_catalog('lake')").fetchone() == ("attached",)
    assert con.execute("SELECT count(*) FROM lake.raw.events").fetchone() == (7,)
    # The dlt helper's destination passes that schema explicitly (dlt would default to its own name).
    destination = con.execute(
        "SELECT catalog_url, metadata_schema, storage_url, dataset_name FROM srdp_dlt_destination('lake')"
    ).fetchone()
    assert destination == (
        f"postgres://127.0.0.1:{servers.pg_port}/{lake.database}",
        "ducklake",
        lake.data_path,
        "raw",
    )
    # The contrast: the definition without metadata_schema (PostgreSQL default "public") does not see it.
    missing = write_config(
        tmp_path / "missing", config_text(servers, lake.database, "public", lake.prefix).replace('metadata_schema = "public"\n', "")
    )
    con2 = lake.connect(connect)
    with pytest.raises(duckdb.Error) as e:
        con2.execute(f"SELECT * FROM srdp_attach_catalog('lake', config := '{missing}')").fetchall()
    message = str(e.value)
    assert message.startswith(
        "Invalid Input Error: srdp_attach_catalog: attaching catalog 'lake' as 'lake' (reader) failed: "
    ), message
    assert (
        f'Existing DuckLake at metadata catalog "postgres:dbname={lake.database} host=127.0.0.1 port={servers.pg_port}" '
        "does not exist - and creating a new DuckLake is explicitly disabled"
    ) in message, message
    assert servers.pg_password not in message


def test_wrong_password_unreachable_server_and_missing_secret_are_clear_and_secret_free(servers, tmp_path, connect):
    lake = new_lake(servers, tmp_path)
    con = connect(config=lake.cfg)
    # Missing secret: nothing attached, the secret named.
    with pytest.raises(duckdb.Error) as e:
        con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
    assert "needs the DuckDB secret 'pg_writer' for the writer role" in str(e.value)
    # Wrong password.
    bad = "Wr0ng-Pa55word-xyz"
    con.execute(lake.pg_secret_sql("pg_writer", servers.pg_superuser, bad))
    con.execute(lake.s3_secret_sql())
    with pytest.raises(duckdb.Error) as e:
        con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
    message = str(e.value)
    assert message.startswith(
        "Invalid Input Error: srdp_attach_catalog: attaching catalog 'lake' as 'lake' (writer) failed: "
    ), message
    assert "password authentication failed" in message, message
    assert message.rstrip().endswith(
        "PostgreSQL refused the credentials: check USER and PASSWORD of DuckDB secret 'pg_writer' "
        "(CREATE OR REPLACE SECRET ...); nothing was attached"
    ), message
    assert bad not in message and servers.pg_password not in message
    assert con.execute("SELECT count(*) FROM duckdb_databases() WHERE database_name = 'lake'").fetchone() == (0,)
    # Unreachable server: a closed port.
    from servers import free_port

    closed = write_config(tmp_path / "closed", config_text(servers, lake.database, "lake", lake.prefix).replace(str(servers.pg_port), str(free_port())))
    con.execute(lake.pg_secret_sql("pg_writer", servers.pg_superuser, servers.pg_password).replace(str(servers.pg_port), str(free_port())))
    with pytest.raises(duckdb.Error) as e:
        con.execute(f"SELECT * FROM srdp_attach_catalog('lake', role := 'writer', config := '{closed}')").fetchall()
    message = str(e.value)
    assert message.startswith(
        "Invalid Input Error: srdp_attach_catalog: attaching catalog 'lake' as 'lake' (writer) failed: "
    ), message
    assert "Connection refused" in message, message
    assert "the PostgreSQL server is not reachable: check host and port" in message, message
    assert servers.pg_password not in message


def test_generated_roles_are_least_privilege_and_enforced_by_postgres(servers, tmp_path, connect):
    lake = new_lake(servers, tmp_path)
    con = connect(config=lake.cfg)
    script = con.execute("SELECT seq, applies_to, statement FROM srdp_postgres_roles('lake', reader_role := ?, writer_role := ?) ORDER BY seq",
                         [f"{lake.database}_r", f"{lake.database}_w"]).fetchall()
    assert [s for _, _, s in script][0].startswith(f'DO $srdp$ BEGIN CREATE ROLE "{lake.database}_w" LOGIN NOSUPERUSER')
    # The DBA runs the script (twice: it is idempotent) and sets the passwords.
    for _ in range(2):
        for _, _, statement in script:
            servers.psql(statement, lake.database)
    servers.psql(f"ALTER ROLE {lake.database}_w PASSWORD 'writer-pw'")
    servers.psql(f"ALTER ROLE {lake.database}_r PASSWORD 'reader-pw'")
    flags = servers.psql(
        f"SELECT rolname, rolsuper, rolcreatedb, rolcreaterole, rolbypassrls FROM pg_roles WHERE rolname LIKE '{lake.database}_%' ORDER BY 1"
    ).split()
    assert flags == [f"{lake.database}_r|f|f|f|f", f"{lake.database}_w|f|f|f|f"]

    lake.writer_user, lake.writer_password = f"{lake.database}_w", "writer-pw"
    lake.reader_user, lake.reader_password = f"{lake.database}_r", "reader-pw"
    w = lake.connect(connect)
    # The writer creates the lake, loads, flushes and compacts.
    assert w.execute("SELECT status FROM srdp_attach_catalog('lake', role := 'writer')").fetchone() == ("attached",)
    fill(w)
    before = w.execute(ROWS).fetchone()
    assert w.execute("SELECT rows_flushed, status FROM srdp_flush('lake')").fetchall() == [(20, "flushed")]
    w.execute("ALTER TABLE lake.main.t ADD COLUMN c VARCHAR")  # a new inlined-data table, created by the writer
    w.execute("INSERT INTO lake.main.t SELECT 100000 + range, 'late', 'c' FROM range(3)")
    assert w.execute("SELECT status FROM srdp_compact('lake')").fetchall() == [("compacted",)]
    after = w.execute("SELECT count(*) FROM lake.main.t").fetchone()
    assert after == (before[0] + 3,)

    # The reader, attached WITHOUT READ_ONLY by plain DuckDB, can read but PostgreSQL refuses writes.
    r = duckdb.connect(config=__import__("srdp").duckdb_config())
    for s in lake.setup_sql():
        r.execute(s)
    r.execute(
        f"ATTACH 'ducklake:postgres:dbname={lake.database} host=127.0.0.1 port={servers.pg_port}' AS lake "
        f"(METADATA_SCHEMA 'lake', META_SECRET 'pg_reader')"
    )
    assert r.execute("SELECT count(*) FROM lake.main.t").fetchone() == after
    for statement in (
        "INSERT INTO lake.main.t VALUES (-1, 'x', 'y')",
        "CREATE TABLE lake.main.evil (i INT)",
        "DROP TABLE lake.main.t",
    ):
        with pytest.raises(duckdb.Error) as e:
            r.execute(statement)
        assert "permission denied" in str(e.value), (statement, str(e.value))
        assert "reader-pw" not in str(e.value)
    r.close()
    assert w.execute("SELECT count(*) FROM lake.main.t").fetchone() == after
