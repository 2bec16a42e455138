"""A dataset with very many small files is merged in bounded calls, with the plain merge's rows.

One `ducklake_merge_adjacent_files` call over N small files holds memory proportional to N (scan
state, the order-preserving copy's batches, the commit's file lists, and DuckDB's external file
cache, which keeps ~12.5 KB of every file it read). `srdp_compact` merges a dataset with more than
`merge_batch_files` small files in calls of at most that many input files each, with the external
file cache off while it runs (docs/research/merge-memory.md; src/maintenance/batched.rs).

The lakes here hold one table of tiny Parquet files (one 5-row INSERT each, inlining off). The
sizes are small so the test stays quick; `make bench` runs 30,000 files.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

import srdp
from conftest import run_python, write_config
from lakecheck import Lake

FILES = 1200
BATCH = 200


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


def build(con, alias: str, files: int, start: int = 0) -> None:
    """`files` tiny Parquet files in `main.t`, 100 INSERTs (one snapshot) per transaction."""
    con.execute(f"CREATE TABLE IF NOT EXISTS {alias}.t (id BIGINT, v VARCHAR)")
    for first in range(start, start + files, 100):
        con.execute("BEGIN")
        for k in range(first, min(first + 100, start + files)):
            con.execute(f"INSERT INTO {alias}.t SELECT i, 'v' || i FROM range({k * 5}, {k * 5 + 5}) r(i)")
        con.execute("COMMIT")


def copy_lake(tmp_path: Path, source: str, target: str) -> None:
    """A copy of lake `source` (catalog file and data folder) as lake `target`."""
    shutil.copy(tmp_path / f"{source}.sqlite", tmp_path / f"{target}.sqlite")
    shutil.copytree(tmp_path / source, tmp_path / target)
    with sqlite3.connect(tmp_path / f"{target}.sqlite") as db:
        db.execute("UPDATE ducklake_metadata SET value = ? WHERE key = 'data_path'", [f"{tmp_path / target}/"])


def fingerprint(con, alias: str, version: int | None = None) -> tuple:
    at = f" AT (VERSION => {version})" if version is not None else ""
    return con.execute(
        f"SELECT count(*), sum(hash(id, v)), sum(hash(rowid, id)), min(rowid), max(rowid) FROM {alias}.t{at}"
    ).fetchone()


def live_files(con, alias: str, version: int) -> set[str]:
    return {
        r[0]
        for r in con.execute(
            f"SELECT data_file FROM ducklake_list_files('{alias}', 't', schema => 'main', snapshot_version => {version})"
        ).fetchall()
    }


def snapshots(con, alias: str) -> list[int]:
    return [r[0] for r in con.execute(f"SELECT snapshot_id FROM {alias}.snapshots() ORDER BY 1").fetchall()]


@pytest.fixture(scope="module")
def twins(tmp_path_factory):
    """Two identical lakes of FILES tiny files: one for srdp, one for the plain merge."""
    tmp_path = tmp_path_factory.mktemp("bounded")
    cfg = lake_config(tmp_path, ["plain", "viasrdp"])
    con = srdp.connect(config=str(cfg))
    con.execute("SELECT * FROM srdp_attach_catalog('plain', role := 'writer')").fetchall()
    build(con, "plain", FILES)
    # A small delete on one of the files: DuckLake leaves files with deletes out of its merges, so
    # srdp rewrites it first.
    con.execute("DELETE FROM plain.t WHERE id IN (7, 8)")
    con.close()
    copy_lake(tmp_path, "plain", "viasrdp")
    return tmp_path, cfg


def test_srdp_merges_many_small_files_in_bounded_calls_with_the_plain_merges_rows(twins):
    tmp_path, cfg = twins
    con = srdp.connect(config=str(cfg))
    for alias in ("plain", "viasrdp"):
        con.execute(f"SELECT * FROM srdp_attach_catalog('{alias}', role := 'writer')").fetchall()
    versions = snapshots(con, "plain")
    assert versions == snapshots(con, "viasrdp")
    before = {v: fingerprint(con, "plain", v) for v in versions[1:]}
    assert all(fingerprint(con, "viasrdp", v) == before[v] for v in versions[1:])
    files_before = Lake(con, "plain").file_counts()[("main", "t")]
    assert files_before == FILES

    rewritten = con.execute(
        "CALL ducklake_rewrite_data_files('plain', 't', schema => 'main', delete_threshold => 0)").fetchall()
    plain = con.execute("CALL ducklake_merge_adjacent_files('plain', 't', schema => 'main')").fetchall()
    (row,) = srdp.call(con, "srdp_compact", "viasrdp", merge_batch_files=BATCH)

    # srdp: the file with the delete rewritten, then every small file merged, in bounded calls
    # that each replaced about BATCH files.
    assert row["files_before"] == FILES
    assert (row["files_rewritten"], row["deletes_applied"]) == (1, 2)
    assert row["status"].startswith("compacted; 1 file with deletes rewritten (2 deleted rows left out); merged in ")
    calls = int(row["status"].split("merged in ")[1].split(" ")[0])
    assert calls >= FILES // BATCH
    ours = snapshots(con, "viasrdp")[len(versions):]
    assert len(ours) == 1 + calls
    # Each call schedules the data files it replaced for deletion at its commit time (the rewrite's
    # retired file among them, and the delete file the rewrite applied).
    replaced = dict(
        con.execute(
            "SELECT schedule_start, count(*) FROM __ducklake_metadata_viasrdp.ducklake_files_scheduled_for_deletion "
            "WHERE path NOT LIKE '%-delete.parquet' GROUP BY 1"
        ).fetchall()
    )
    assert len(replaced) == calls
    # DuckLake packs by bytes: srdp's byte target is BATCH times the average tiny file, so a call
    # takes about BATCH files (the sizes here vary by a few bytes).
    assert 2 <= min(replaced.values()) and max(replaced.values()) <= BATCH * 1.05
    assert row["files_processed"] == sum(replaced.values())
    authors = {r[0] for r in con.execute(f"SELECT author FROM viasrdp.snapshots() WHERE snapshot_id > {versions[-1]}").fetchall()}
    assert authors == {"srdp"}

    # The same end state as one plain call: rows, row ids, live files, and every old version.
    assert rewritten == [("main", "t", 1, 1)]
    assert plain[0][2] == FILES  # the rewritten file merged with the others
    assert fingerprint(con, "viasrdp") == fingerprint(con, "plain") == before[versions[-1]]
    assert Lake(con, "viasrdp").file_counts() == Lake(con, "plain").file_counts()
    assert row["files_after"] == Lake(con, "viasrdp").file_counts()[("main", "t")] == 1
    for v in versions[1:]:
        assert fingerprint(con, "viasrdp", v) == before[v] == fingerprint(con, "plain", v)
    # Nothing is left for the plain call, and no file was deleted from storage.
    again = con.execute("CALL ducklake_merge_adjacent_files('viasrdp', 't', schema => 'main')").fetchall()
    assert [r[2] for r in again] in ([], [0])
    # The FILES files, the delete file, the rewrite's file, the merges' files.
    assert len(list((tmp_path / "viasrdp").rglob("*.parquet"))) == FILES + 1 + 1 + row["files_created"]

    # The caller's external file cache setting is as it was.
    assert con.execute("SELECT current_setting('enable_external_file_cache')").fetchone() == (True,)
    con.execute("SET GLOBAL enable_external_file_cache = false")
    (row,) = srdp.call(con, "srdp_compact", "viasrdp", merge_batch_files=BATCH)
    assert row["status"] == "nothing to do"
    assert con.execute("SELECT current_setting('enable_external_file_cache')").fetchone() == (False,)
    con.close()


def test_a_partitioned_dataset_merges_several_partitions_per_bounded_call(tmp_path):
    """40 partitions of 20 tiny files: with batches of 100, each call merges five partitions
    (`max_compacted_files => 5`), and both lakes end with one file per partition."""
    cfg = lake_config(tmp_path, ["plain", "viasrdp"])
    con = srdp.connect(config=str(cfg))
    for alias in ("plain", "viasrdp"):
        con.execute(f"SELECT * FROM srdp_attach_catalog('{alias}', role := 'writer')").fetchall()
        con.execute(f"CREATE TABLE {alias}.t (id BIGINT, v VARCHAR, part INTEGER)")
        con.execute(f"ALTER TABLE {alias}.t SET PARTITIONED BY (part)")
        for first in range(0, 800, 100):
            con.execute("BEGIN")
            for k in range(first, first + 100):
                con.execute(f"INSERT INTO {alias}.t SELECT i, 'v' || i, {k % 40} FROM range({k * 5}, {k * 5 + 5}) r(i)")
            con.execute("COMMIT")
    versions = snapshots(con, "plain")
    before = {v: fingerprint(con, "plain", v) for v in versions[1:]}
    con.execute("CALL ducklake_merge_adjacent_files('plain', 't', schema => 'main')").fetchall()
    (row,) = srdp.call(con, "srdp_compact", "viasrdp", merge_batch_files=100)
    assert (row["files_before"], row["files_after"]) == (800, 40)
    calls = int(row["status"].split("merged in ")[1].split(" ")[0])
    assert 8 <= calls <= 12  # 800 files in calls of five partitions (~100 files) each
    assert Lake(con, "viasrdp").file_counts() == Lake(con, "plain").file_counts() == {("main", "t"): 40}
    parts = "SELECT part, count(*), sum(hash(rowid, id, v)) FROM {a}.t GROUP BY part ORDER BY part"
    assert con.execute(parts.format(a="viasrdp")).fetchall() == con.execute(parts.format(a="plain")).fetchall()
    for v in versions[1:]:
        assert fingerprint(con, "viasrdp", v) == before[v] == fingerprint(con, "plain", v)
    con.close()


def test_a_bounded_merge_of_an_auto_compact_false_dataset_is_explicit_and_leaves_the_option(tmp_path):
    """Each bounded call is an explicit step (ADR 000): it sets `auto_compact` true and back to
    false in its own transaction, so the option rows are exactly as before."""
    cfg = lake_config(tmp_path, ["lake"])
    con = srdp.connect(config=str(cfg))
    con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
    build(con, "lake", 500)
    con.execute("CALL lake.set_option('auto_compact', false, schema => 'main', table_name => 't')")
    options = "SELECT * FROM __ducklake_metadata_lake.ducklake_metadata ORDER BY ALL"
    before_options, before_rows = con.execute(options).fetchall(), fingerprint(con, "lake")

    (row,) = srdp.call(con, "srdp_compact", "lake", merge_batch_files=100)
    assert row["status"].startswith("compacted; explicit: auto_compact is false for bulk calls only; merged in ")
    assert (row["files_before"], row["files_after"]) == (500, 1)
    assert con.execute(options).fetchall() == before_options
    assert fingerprint(con, "lake") == before_rows
    # DuckLake's own calls still skip the table.
    assert con.execute("CALL ducklake_merge_adjacent_files('lake', 't', schema => 'main')").fetchall() == []
    con.close()


def test_merge_batch_files_below_two_is_refused_by_name(tmp_path):
    cfg = lake_config(tmp_path, ["lake"])
    con = srdp.connect(config=str(cfg))
    with pytest.raises(Exception, match=r"srdp_compact: merge_batch_files must be at least 2 .* got 1; leave it out for the default \(2000 files, 5000 with one thread\)"):
        srdp.call(con, "srdp_compact", "lake", merge_batch_files=1)
    con.close()


PEAK = """
import json, srdp
from pathlib import Path

def hwm_kb():
    status = Path("/proc/self/status").read_text().splitlines()
    return int(next(line for line in status if line.startswith("VmHWM:")).split()[1])

con = srdp.connect(config={cfg!r})
con.execute("SELECT * FROM srdp_attach_catalog({alias!r}, role := 'writer')").fetchall()
srdp.call(con, "srdp_compact", {alias!r}, dry_run=True)  # srdp's own connection and attachment
rss = [line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("VmRSS:")]
Path("/proc/self/clear_refs").write_text("5")  # the peak (VmHWM) starts again from now
base = int(rss[0].split()[1])
{call}
print(json.dumps({{"growth_kb": hwm_kb() - base}}))
"""


def peak_growth(cfg: Path, alias: str, call: str) -> int:
    code = PEAK.format(cfg=str(cfg), alias=alias, call=call)
    return json.loads(run_python(code).strip().splitlines()[-1])["growth_kb"]


def test_the_bounded_merges_memory_does_not_grow_with_the_file_count(tmp_path):
    """Peak RSS growth of the merge, each in a fresh process: the plain call grows with the
    file count, srdp's bounded calls do not (the same batch size at N and 3N files)."""
    names = ["small_plain", "small_srdp", "large_plain", "large_srdp"]
    cfg = lake_config(tmp_path, names)
    con = srdp.connect(config=str(cfg))
    con.execute("SELECT * FROM srdp_attach_catalog('small_plain', role := 'writer')").fetchall()
    build(con, "small_plain", 1000)
    con.close()
    copy_lake(tmp_path, "small_plain", "large_plain")
    con = srdp.connect(config=str(cfg))
    con.execute("SELECT * FROM srdp_attach_catalog('large_plain', role := 'writer')").fetchall()
    build(con, "large_plain", 2000, start=1000)
    con.close()
    for size in ("small", "large"):
        copy_lake(tmp_path, f"{size}_plain", f"{size}_srdp")

    plain = "con.execute(\"CALL ducklake_merge_adjacent_files('{a}', 't', schema => 'main')\").fetchall()"
    ours = "assert srdp.call(con, 'srdp_compact', '{a}', merge_batch_files=200)[0]['files_after'] == 1"
    growth = {
        (size, way): peak_growth(cfg, f"{size}_{way}", (plain if way == "plain" else ours).format(a=f"{size}_{way}"))
        for size in ("small", "large")
        for way in ("plain", "srdp")
    }
    print(growth)
    # The plain call grows with the files (1,000 -> 3,000); srdp's calls stay at one batch.
    assert growth[("large", "plain")] > growth[("small", "plain")] + 40_000
    plain_slope = growth[("large", "plain")] - growth[("small", "plain")]
    assert growth[("large", "srdp")] - growth[("small", "srdp")] < plain_slope / 4
    assert growth[("large", "srdp")] < growth[("large", "plain")] / 2
