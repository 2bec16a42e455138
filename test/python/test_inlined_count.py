"""Inlined rows are counted by the catalog database itself, with the same numbers.

DuckDB binds every table of a `UNION ALL` over DuckLake's inlined tables through its SQLite
catalog, 2-8 ms per table, so counting 1,000 datasets took ~9 s. srdp hands the union to SQLite
(`sqlite_query`, in chunks under SQLite's 500-term limit) or PostgreSQL (`postgres_query`), and
falls back to DuckDB's union if that fails. DuckDB's query log shows which one ran: the runner's
queries are logged like the caller's.
"""

from __future__ import annotations

from pathlib import Path

import srdp
from conftest import write_config

TABLES = 520  # over SQLite's 500-term compound SELECT limit: srdp needs several chunks


def hand_count(con, alias: str) -> dict[str, int]:
    """Inlined insertion records per table name, through DuckDB's catalog of the metadata."""
    meta = f"__ducklake_metadata_{alias}.main"
    registry = con.execute(
        f"SELECT r.table_name, t.table_name FROM {meta}.ducklake_inlined_data_tables r "
        f"JOIN {meta}.ducklake_table t ON t.table_id = r.table_id AND t.end_snapshot IS NULL"
    ).fetchall()
    counts: dict[str, int] = {}
    for inlined, table in registry:
        n = con.execute(f'SELECT count(*) FROM {meta}."{inlined}"').fetchone()[0]
        counts[table] = counts.get(table, 0) + n
    return counts


def test_srdp_counts_inlined_rows_in_sqlite_itself_over_the_500_term_limit(tmp_path: Path) -> None:
    cfg = write_config(
        tmp_path,
        f"""
        [catalogs.lake]
        metadata = "sqlite:{tmp_path}/lake.sqlite"
        data_path = "{tmp_path}/data/"
        [catalogs.lake.schemas.main]
        writer = "io_manager"
        layer = "raw"
        """,
    )
    con = srdp.connect(config=str(cfg))
    con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
    con.execute("BEGIN")
    for i in range(TABLES):
        con.execute(f"CREATE TABLE lake.t{i:03d} (id BIGINT)")
        con.execute(f"INSERT INTO lake.t{i:03d} SELECT range FROM range({i % 7 + 1})")
    con.execute("COMMIT")
    con.execute("DELETE FROM lake.t005 WHERE id = 0")  # an inlined delete: the record stays
    expected = hand_count(con, "lake")
    assert len(expected) == TABLES and sum(expected.values()) == sum(i % 7 + 1 for i in range(TABLES))

    con.execute("CALL enable_logging('QueryLog')")
    rows = con.execute("SELECT table_name, inlined_rows FROM srdp_inlined_row_count('lake')").fetchall()
    assert dict(rows) == expected
    pressure = con.execute("SELECT table_name, inlined_rows FROM srdp_catalog_pressure('lake', threshold := 5)").fetchall()
    assert dict(pressure) == {t: n for t, n in expected.items() if n > 5}
    logged = [r[0] for r in con.execute("SELECT message FROM duckdb_logs WHERE type = 'QueryLog'").fetchall()]
    con.execute("CALL disable_logging()")
    pushed = [q for q in logged if "FROM sqlite_query('__ducklake_metadata_lake'" in q]
    assert len(pushed) == 2  # one per call
    registry = con.execute("SELECT count(*) FROM __ducklake_metadata_lake.main.ducklake_inlined_data_tables").fetchone()[0]
    chunks = -(-registry // 250)  # srdp's chunk size (sql::UNION_TERMS)
    assert registry > 500 and [q.count("FROM sqlite_query(") for q in pushed] == [chunks, chunks]
    # DuckDB's own union over the inlined tables (the fallback) never ran.
    assert not [q for q in logged if 'AS n FROM "__ducklake_metadata_lake"."main"."ducklake_inlined_data_' in q]
    con.close()
