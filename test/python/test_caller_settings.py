"""The calling session's DuckLake settings count for srdp's steps, as they do for the plain calls.

srdp runs its steps on its own connection, which sees only global values. Each srdp_flush and
srdp_compact call reads the caller's effective values of DuckLake's settings in bind and gives
them to that connection for the call (issue: `SET SESSION ducklake_target_file_size = '512MB'`
made the plain merge merge 4 files into 1 while srdp_compact reported `4 -> 4, nothing to do`).

Every lake here is built the same way: table `main.example` with four 1,000-row Parquet files
and the catalog option `target_file_size = '1KB'`, under which no file counts as small. The
session setting overrides that option (DuckLake 1.0's order: setting, then option).
"""

from __future__ import annotations

from pathlib import Path

import srdp
from conftest import write_config
from lakecheck import Lake

BUILD = [
    "CREATE TABLE {a}.example (i INTEGER)",
    "CALL {a}.set_option('target_file_size', '1KB')",
    *[f"INSERT INTO {{a}}.example SELECT range FROM range({k * 1000}, {(k + 1) * 1000})" for k in range(4)],
]


def lake_config(tmp_path: Path, names: list[str]) -> Path:
    text = "\n".join(
        f"""
        [catalogs.{name}]
        metadata = "sqlite:{tmp_path / name}.sqlite"
        data_path = "{tmp_path / name}/"
        data_inlining_row_limit = 0
        [catalogs.{name}.schemas.main]
        writer = "io_manager"
        layer = "raw"
        """
        for name in names
    )
    return write_config(tmp_path, text)


def build(con, alias: str) -> None:
    con.execute(f"SELECT * FROM srdp_attach_catalog('{alias}', role := 'writer')").fetchall()
    for statement in BUILD:
        con.execute(statement.format(a=alias))


def fingerprint(con, alias: str) -> tuple:
    """Rows, their row ids, and the live data files of the example table."""
    rows = con.execute(f"SELECT count(*), sum(hash(i)), sum(hash(rowid, i)) FROM {alias}.example").fetchone()
    return rows, Lake(con, alias).file_counts()[("main", "example")]


def test_the_callers_session_setting_counts_for_srdp_compact_as_for_the_plain_merge(tmp_path):
    cfg = lake_config(tmp_path, ["plain", "viasrdp", "other", "globally"])
    caller = srdp.connect(config=str(cfg))
    for alias in ("plain", "viasrdp", "other", "globally"):
        build(caller, alias)
    before = fingerprint(caller, "plain")
    assert before[1] == 4 and all(fingerprint(caller, a) == before for a in ("viasrdp", "other", "globally"))

    caller.execute("SET SESSION ducklake_target_file_size = '512MB'")
    plain = caller.execute("CALL ducklake_merge_adjacent_files('plain', 'example', schema => 'main')").fetchall()
    assert plain == [("main", "example", 4, 1)]
    (row,) = srdp.call(caller, "srdp_compact", "viasrdp")
    assert (row["files_before"], row["files_after"], row["files_processed"], row["files_created"], row["status"]) == (
        4, 1, 4, 1, "compacted"
    )
    # The same rows, row ids and live files as the plain merge.
    assert fingerprint(caller, "viasrdp") == fingerprint(caller, "plain") == (before[0], 1)

    # Another connection of the same database, whose session has no such setting: srdp's
    # connection does not keep the first caller's value.
    other = caller.cursor()
    other.execute("SET srdp_config = ?", [str(cfg)])
    (row,) = srdp.call(other, "srdp_compact", "other")
    assert (row["files_before"], row["files_after"], row["files_processed"], row["status"]) == (
        4, 4, 0, "nothing to do"
    )
    assert other.execute("SELECT current_setting('ducklake_target_file_size')").fetchone() == (None,)
    assert fingerprint(caller, "other") == before

    # A global value counts too (srdp's connection would see it anyway).
    other.execute("SET GLOBAL ducklake_target_file_size = '512MB'")
    (row,) = srdp.call(other, "srdp_compact", "globally")
    assert (row["files_before"], row["files_after"], row["status"]) == (4, 1, "compacted")
    assert fingerprint(caller, "globally") == (before[0], 1)
    # The caller's own setting is untouched by srdp.
    assert caller.execute("SELECT current_setting('ducklake_target_file_size')").fetchone() == ("512MB",)
    caller.close()
