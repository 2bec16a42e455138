"""Landing retention deletes only what raw holds, parses dlt's file names by dlt's rules, and keeps
loads younger than ``older_than``. Real dlt 1.31 lands into a local landing folder, srdp promotes,
retention runs; the folder is read from the disk, raw through srdp's attach.

* A table no promotion took stays, whatever its name: dlt's child table ``orders__items`` beside a
  promotion of ``{"orders": []}``, and a separate resource named ``orders__archive``. Only tables
  the ledger records for a load (the parent and the child tables promoted with it) lose files.
* A pipeline named ``my__pipe`` (dlt allows ``__`` in it): its newest state file and that load's
  marker stay, its older ones go, and no phantom load is reported ``unfinished``.
* ``older_than = 7 days``: a load promoted just now keeps every file; 8 days later they go.
"""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Any

import dlt
import pyarrow.parquet as pq

import srdp.ingest.dlt as srdp_dlt
from conftest import write_config
from landing_support import LANDING_TOML, checksum, expected_items, files_under, order, orders_resource, raw_rows
from srdp.dagster import SrdpIOManager
from srdp.ingest import landing_retention, promote_landing


def setup(tmp_path: Path) -> tuple[Path, SrdpIOManager, srdp_dlt.DltDestination, Path]:
    cfg = write_config(tmp_path, LANDING_TOML.format(landing="landing", extra=""))
    dest = srdp_dlt.destination("lake", config=cfg, layer="landing")
    return cfg, SrdpIOManager(config_path=str(cfg)), dest, tmp_path / "landing" / "landing"


def statuses(outcomes: list[Any]) -> list[tuple[str, str]]:
    return [(o.load_id, o.status) for o in outcomes]


def landed(zone: Path, table: str) -> list[tuple[Any, ...]]:
    """Every row of a landing table's files, straight from the disk (sorted)."""
    rows: list[tuple[Any, ...]] = []
    for path in sorted((zone / table).glob("*.parquet")):
        data = pq.read_table(path)
        wanted = [c for c in data.column_names if not c.startswith("_dlt_")]
        rows += [tuple(r[c] for c in wanted) for r in data.select(wanted).to_pylist()]
    return sorted(rows)


def data_files(files: list[str]) -> list[tuple[str, str]]:
    """(table, load id) of each data file among ``files`` (paths relative to the zone)."""
    found = []
    for f in files:
        table, _, name = f.partition("/")
        if name and not table.startswith("_dlt"):
            found.append((table, name.rsplit(".", 2)[0]))
    return sorted(found)


def test_tables_no_promotion_took_keep_their_files_whatever_their_name(tmp_path: Path) -> None:
    cfg, io, dest, zone = setup(tmp_path)
    pipeline = dest.pipeline("shop", pipelines_dir=str(tmp_path / "p"))
    archive = dlt.resource([{"id": 1, "note": "old"}, {"id": 2, "note": "older"}], name="orders__archive")
    load = dest.run(pipeline, [orders_resource([order(1), order(2)]), archive]).loads_ids[0]
    assert sorted(p.name for p in zone.iterdir() if p.is_dir() and not p.name.startswith("_dlt")) == [
        "orders", "orders__archive", "orders__items"]
    items, archived = landed(zone, "orders__items"), landed(zone, "orders__archive")
    assert (len(items), len(archived)) == (len(expected_items([1, 2])), 2)

    # The promotion takes orders alone: its child table orders__items is not listed.
    assert statuses(promote_landing(dest, "orders", io_manager=io)) == [(load, "promoted")]
    assert raw_rows(cfg) == [(1, 10), (2, 20)]
    report = landing_retention(dest, io_manager=io, older_than=dt.timedelta(0))
    left = files_under(zone)
    assert data_files(left) == [("orders__archive", load), ("orders__items", load)], report.deleted
    assert (checksum(landed(zone, "orders__items")), checksum(landed(zone, "orders__archive"))) == (
        checksum(items), checksum(archived))
    # The load is not wholly in raw: it holds the watermark, its marker and state file stay.
    assert report.watermark == load
    assert f"_dlt_loads/shop__{load}.jsonl" in left

    # A later promotion that lists the child takes the remaining loads with it; retention then
    # deletes exactly what the ledger records: the child rides with its parent, orders__archive
    # (no promotion) stays.
    second = dest.run(pipeline, [orders_resource([order(1), order(2), order(4), order(5)])]).loads_ids[0]
    assert statuses(promote_landing(dest, "orders", ["orders__items"], io_manager=io)) == [(second, "promoted")]
    assert raw_rows(cfg, "orders__items") == expected_items([4, 5])
    report = landing_retention(dest, io_manager=io, older_than=dt.timedelta(0))
    assert data_files(files_under(zone)) == [("orders__archive", load), ("orders__items", load)], report.deleted
    assert report.watermark == load


def test_a_pipeline_named_with_a_double_underscore_keeps_its_newest_state_and_marker(tmp_path: Path) -> None:
    cfg, io, dest, zone = setup(tmp_path)
    pipeline = dest.pipeline("my__pipe", pipelines_dir=str(tmp_path / "p"))
    source = [order(1), order(2)]
    loads = [dest.run(pipeline, orders_resource(source)).loads_ids[0]]
    source += [order(3)]
    loads.append(dest.run(pipeline, orders_resource(source)).loads_ids[0])
    before = files_under(zone)
    markers = [f for f in before if f.startswith("_dlt_loads/")]
    states = [f for f in before if f.startswith("_dlt_pipeline_state/")]
    schema = markers[0].split("/")[1].rsplit("__", 1)[0]
    assert markers == [f"_dlt_loads/{schema}__{i}.jsonl" for i in loads]
    assert [s.rsplit("__", 1)[0] for s in states] == [f"_dlt_pipeline_state/my__pipe__{i}" for i in loads]

    assert statuses(promote_landing(dest, "orders", ["orders__items"], io_manager=io)) == [
        (loads[0], "promoted"), (loads[1], "promoted")]
    report = landing_retention(dest, io_manager=io, older_than=dt.timedelta(0))
    assert report.watermark is None
    left = files_under(zone)
    assert [f for f in left if f.startswith(("_dlt_loads/", "_dlt_pipeline_state/"))] == [markers[1], states[1]]
    assert report.kept_state_files == [str(zone / states[1])]
    # No phantom load: a rerun has nothing to report, and a new machine extracts only new rows.
    assert promote_landing(dest, "orders", ["orders__items"], io_manager=io) == []
    fresh = dest.pipeline("my__pipe", pipelines_dir=str(tmp_path / "machine2"))
    info = dest.run(fresh, orders_resource(source + [order(4)]))
    assert fresh.last_trace.last_normalize_info.row_counts["orders"] == 1
    assert statuses(promote_landing(dest, "orders", ["orders__items"], io_manager=io)) == [(info.loads_ids[0], "promoted")]
    assert raw_rows(cfg) == [(i, i * 10) for i in range(1, 5)]


def test_a_load_promoted_just_now_keeps_its_files_under_a_seven_day_window(tmp_path: Path) -> None:
    cfg, io, dest, zone = setup(tmp_path)
    pipeline = dest.pipeline("shop", pipelines_dir=str(tmp_path / "p"))
    source = [order(1), order(2)]
    loads = [dest.run(pipeline, orders_resource(source)).loads_ids[0]]
    source += [order(3)]
    loads.append(dest.run(pipeline, orders_resource(source)).loads_ids[0])
    assert statuses(promote_landing(dest, "orders", ["orders__items"], io_manager=io)) == [
        (loads[0], "promoted"), (loads[1], "promoted")]
    before = files_under(zone)
    now = dt.datetime.now(dt.timezone.utc)
    week = dt.timedelta(days=7)

    report = landing_retention(dest, io_manager=io, older_than=week, now=now)
    assert (report.deleted, report.watermark) == ([], None)
    assert files_under(zone) == before
    # From the Dagster job too (it passes no `now`).
    from srdp.dagster import landing_retention_schedule
    import dagster as dg

    job = dg.Definitions(
        schedules=[landing_retention_schedule(dest, older_than=week)], resources={"io_manager": io},
    ).resolve_job_def("srdp_landing_retention_lake_landing")
    assert job.execute_in_process().success
    assert files_under(zone) == before

    # Six days on: still inside the window. Eight days on: the older load's files go, the newest
    # state file and its marker stay.
    assert landing_retention(dest, io_manager=io, older_than=week, now=now + dt.timedelta(days=6)).deleted == []
    report = landing_retention(dest, io_manager=io, older_than=week, now=now + dt.timedelta(days=8))
    gone = sorted(str(Path(p).relative_to(zone)) for p in report.deleted)
    assert gone == sorted(f for f in before if (loads[0] in f) or (f.startswith(("orders/", "orders__items/")) and loads[1] in f))
    assert raw_rows(cfg) == [(1, 10), (2, 20), (3, 30)]


def test_a_load_dlt_made_before_the_window_but_promoted_just_now_keeps_its_files(tmp_path: Path) -> None:
    """The window counts from the promotion too: a load that waited (a pending package dlt loaded
    late, a quarantined load fixed later) is not deleted the moment it reaches raw."""
    cfg, io, dest, zone = setup(tmp_path)
    pipeline = dest.pipeline("shop", pipelines_dir=str(tmp_path / "p"))
    loads = [dest.run(pipeline, orders_resource([order(1), order(2)])).loads_ids[0]]
    loads.append(dest.run(pipeline, orders_resource([order(1), order(2), order(3)])).loads_ids[0])
    window = dt.timedelta(seconds=5)
    time.sleep(6)  # both loads are older than the window now
    assert statuses(promote_landing(dest, "orders", ["orders__items"], io_manager=io)) == [
        (loads[0], "promoted"), (loads[1], "promoted")]
    before = files_under(zone)
    report = landing_retention(dest, io_manager=io, older_than=window)
    assert (report.deleted, files_under(zone)) == ([], before)
    # Once the promotion is older than the window too, the files go.
    later = dt.datetime.now(dt.timezone.utc) + window + dt.timedelta(seconds=1)
    report = landing_retention(dest, io_manager=io, older_than=window, now=later)
    assert sorted(str(Path(p).relative_to(zone)) for p in report.deleted) == sorted(
        f for f in before if (loads[0] in f) or (f.startswith(("orders/", "orders__items/")) and loads[1] in f))
    assert raw_rows(cfg) == [(1, 10), (2, 20), (3, 30)]


def test_retention_keeps_a_quarantined_loads_marker_and_state_so_it_is_promoted_once_fixed(tmp_path: Path) -> None:
    """L1 promoted, L2 quarantined (its orders file cut in half), L3 waiting behind it. Retention
    deletes below the watermark (L2) only: L1's files and marker go; L2's marker, state file and
    data stay, and L3's. Once L2's file is whole again, L2 and then L3 are promoted. (Deleting
    L2's marker would leave it unfinished for ever: it could never reach raw.)"""
    cfg, io, dest, zone = setup(tmp_path)
    pipeline = dest.pipeline("shop", pipelines_dir=str(tmp_path / "p"))
    source = [order(1), order(2)]
    loads = [dest.run(pipeline, orders_resource(source)).loads_ids[0]]
    assert statuses(promote_landing(dest, "orders", ["orders__items"], io_manager=io)) == [(loads[0], "promoted")]
    source += [order(3), order(4)]
    loads.append(dest.run(pipeline, orders_resource(source)).loads_ids[0])
    source.append(order(5))
    loads.append(dest.run(pipeline, orders_resource(source)).loads_ids[0])
    first, bad, after = loads
    (damaged,) = (zone / "orders").glob(f"{bad}.*.parquet")
    whole = damaged.read_bytes()
    damaged.write_bytes(whole[: len(whole) // 2])
    outcomes = promote_landing(dest, "orders", ["orders__items"], io_manager=io)
    assert statuses(outcomes) == [(bad, "quarantined"), (after, "waiting")]

    before = data_files(files_under(zone))
    assert ("orders", first) in before and ("orders", bad) in before
    report = landing_retention(dest, io_manager=io, older_than=dt.timedelta(0))
    assert report.watermark == bad
    left = files_under(zone)
    assert data_files(left) == [f for f in before if f[1] in (bad, after)]  # L1's data went (it is in raw)
    assert [f for f in left if f.startswith("_dlt_loads/")] == [f"_dlt_loads/shop__{bad}.jsonl", f"_dlt_loads/shop__{after}.jsonl"]
    states = [f for f in left if f.startswith("_dlt_pipeline_state/")]
    assert sorted(f.split("__")[1] for f in states) == [bad, after], states  # L1's state went, L2's stayed
    assert f"_dlt_loads/shop__{first}.jsonl" not in left

    damaged.write_bytes(whole)  # the project re-delivers the file
    outcomes = promote_landing(dest, "orders", ["orders__items"], io_manager=io)
    assert statuses(outcomes) == [(bad, "promoted"), (after, "promoted")]
    assert raw_rows(cfg) == [(i, i * 10) for i in range(1, 6)]
    assert raw_rows(cfg, "orders__items") == expected_items([1, 2, 3, 4, 5])
