"""The landing zone with real dlt 1.31 (filesystem destination) and srdp's promotion into raw.

dlt loads an incremental source into the landing folder (local, and S3 on the test server) in
several runs; the promotion appends each finished load to ``lake.raw_landed`` exactly once;
retention deletes promoted files and keeps what dlt needs, so a run from a NEW working folder (a
new machine) extracts only new rows. Invalid loads are quarantined, unfinished ones reported.
Raw is read back through srdp's attach, the landing folder straight from the disk.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

import dlt
import pyarrow.parquet as pq
import pytest
from dlt.common.configuration.specs import AwsCredentials

import srdp
import srdp.ingest.dlt as srdp_dlt
from conftest import write_config
from landing_support import (
    LANDING_TOML,
    checksum,
    expected_items,
    files_under,
    order,
    orders_resource,
    raw_rows,
)
from srdp.dagster import SrdpIOManager
from srdp.ingest import landing_retention, promote_landing

CHILDREN = ["orders__items"]


def setup(tmp_path: Path, landing: str = "landing", extra: str = "") -> tuple[Path, SrdpIOManager]:
    cfg = write_config(tmp_path, LANDING_TOML.format(landing=landing, extra=extra))
    return cfg, SrdpIOManager(config_path=str(cfg))


def statuses(outcomes: list[Any]) -> list[tuple[str, str]]:
    return [(o.load_id, o.status) for o in outcomes]


@pytest.mark.parametrize("where", ["local", "s3"])
def test_loads_promote_once_retention_keeps_dlt_state_and_a_new_machine_loads_only_new_rows(
    tmp_path: Path, where: str, request: pytest.FixtureRequest
) -> None:
    storage = None
    if where == "s3":
        servers = request.getfixturevalue("servers")
        from pg_lake import BUCKET
        from servers import create_bucket

        try:
            create_bucket(servers, BUCKET)
        except Exception as error:  # an earlier test created it
            if "409" not in str(error):
                raise
        landing = f"s3://{BUCKET}/landing-{tmp_path.name}/"
        storage = AwsCredentials(
            aws_access_key_id=servers.s3_access_key, aws_secret_access_key=servers.s3_secret_key,
            region_name=servers.s3_region, endpoint_url=f"http://{servers.s3_endpoint}",
        )
    else:
        landing = "landing"
    cfg, io = setup(tmp_path, landing)
    dest = srdp_dlt.destination("lake", config=cfg, layer="landing", storage_credentials=storage)
    assert (dest.destination_type, dest.dataset_name, dest.file_format, dest.promote_into) == (
        "filesystem", "landing", "parquet", "raw_landed")
    source = [order(i) for i in range(1, 6)]
    pipeline = dest.pipeline("shop", pipelines_dir=str(tmp_path / "machine1"))
    loads = [dest.run(pipeline, orders_resource(source)).loads_ids[0]]
    source += [order(i) for i in range(6, 9)]
    loads.append(dest.run(pipeline, orders_resource(source)).loads_ids[0])
    if where == "local":
        # dlt's layout in the folder srdp gave it, outside the lake's data path.
        files = files_under(tmp_path / "landing" / "landing")
        assert "init" in files and sum(f.startswith("orders/") for f in files) == 2
        assert [f for f in files if f.startswith("_dlt_loads/")] == [f"_dlt_loads/shop__{i}.jsonl" for i in loads]
        assert not (tmp_path / "data" / "lake" / "landing").exists()

    outcomes = promote_landing(dest, "orders", CHILDREN, io_manager=io, keys={"orders": ["id"]}, run_id="r1")
    assert statuses(outcomes) == [(loads[0], "promoted"), (loads[1], "promoted")]
    assert outcomes[0].rows == {"lake.raw_landed.orders": 5, "lake.raw_landed.orders__items": len(expected_items([1, 2, 3, 4, 5]))}
    ids = list(range(1, 9))
    assert raw_rows(cfg) == [(i, i * 10) for i in ids]
    assert raw_rows(cfg, "orders__items") == expected_items(ids)
    # A second promotion finds nothing new; each load is in raw once.
    assert promote_landing(dest, "orders", CHILDREN, io_manager=io) == []
    assert raw_rows(cfg) == [(i, i * 10) for i in ids]

    report = landing_retention(dest, io_manager=io, older_than=dt.timedelta(0))
    assert report.watermark is None
    zone_files = sorted(p.split(dest.landing_url.split("://", 1)[1].rstrip("/") + "/", 1)[1] for p in _zone_files(dest))
    state_files = [f for f in zone_files if f.startswith("_dlt_pipeline_state/")]
    # Kept: init, the newest state file and its load's marker, dlt's schema; the rest is gone.
    assert [f for f in zone_files if not f.startswith("_dlt_version/")] == [
        f"_dlt_loads/shop__{loads[1]}.jsonl", *state_files, "init"]
    assert len(state_files) == 1 and f"shop__{loads[1]}__" in state_files[0]
    assert any(f.startswith("_dlt_version/") for f in zone_files)

    # A new machine: a new working folder, dlt restores its state from the landing zone.
    source += [order(9), order(10)]
    fresh = dest.pipeline("shop", pipelines_dir=str(tmp_path / "machine2"))
    info = dest.run(fresh, orders_resource(source))
    assert fresh.last_trace.last_normalize_info.row_counts["orders"] == 2
    assert statuses(promote_landing(dest, "orders", CHILDREN, io_manager=io)) == [(info.loads_ids[0], "promoted")]
    ids = list(range(1, 11))
    assert raw_rows(cfg) == [(i, i * 10) for i in ids]
    assert raw_rows(cfg, "orders__items") == expected_items(ids)


def _zone_files(dest: srdp_dlt.DltDestination) -> list[str]:
    from srdp.ingest.landing import zone_of

    zone = zone_of(dest)
    import pyarrow.fs as pafs

    selector = pafs.FileSelector(zone.root, recursive=True)
    return [i.path for i in zone.fs.get_file_info(selector) if i.type == pafs.FileType.File]


def test_a_load_with_a_wrong_type_is_quarantined_later_loads_wait_and_skip_loads_moves_on(tmp_path: Path) -> None:
    cfg, io = setup(tmp_path)
    dest = srdp_dlt.destination("lake", config=cfg, layer="landing")
    pipeline = dest.pipeline("shop", pipelines_dir=str(tmp_path / "p"))
    source = [order(1), order(2)]
    first = dest.run(pipeline, orders_resource(source)).loads_ids[0]
    source.append(order(3, amount="three"))  # dlt keeps it in a variant column amount__v_text
    bad = dest.run(pipeline, orders_resource(source)).loads_ids[0]
    source.append(order(4))
    after = dest.run(pipeline, orders_resource(source)).loads_ids[0]

    outcomes = promote_landing(dest, "orders", CHILDREN, io_manager=io)
    assert statuses(outcomes) == [(first, "promoted"), (bad, "quarantined"), (after, "waiting")]
    assert outcomes[1].reasons == [
        "lake.raw_landed.orders: column 'amount' has value(s) of type text that do not fit its type "
        "(dlt put them in variant column 'amount__v_text'); fix the values at the source and re-deliver the "
        "load (replace its files in the landing zone and rerun), or list the load in skip_loads"
    ]
    assert outcomes[2].reasons == [f"waits behind quarantined load {bad}"]
    assert raw_rows(cfg) == [(1, 10), (2, 20)]
    # Quarantined again on the next run: nothing changes until the project decides.
    assert statuses(promote_landing(dest, "orders", CHILDREN, io_manager=io)) == [(bad, "quarantined"), (after, "waiting")]

    outcomes = promote_landing(dest, "orders", CHILDREN, io_manager=io, skip_loads=[bad])
    assert statuses(outcomes) == [(bad, "skipped"), (after, "promoted")]
    assert raw_rows(cfg) == [(1, 10), (2, 20), (4, 40)]
    assert promote_landing(dest, "orders", CHILDREN, io_manager=io, skip_loads=[bad]) == []


def test_type_changes_against_raw_and_key_violations_are_quarantined_with_the_reason(tmp_path: Path) -> None:
    cfg, io = setup(tmp_path)
    dest = srdp_dlt.destination("lake", config=cfg, layer="landing")
    first = dest.run(dest.pipeline("a", pipelines_dir=str(tmp_path / "a")), orders_resource([order(1)])).loads_ids[0]
    # Another pipeline (its own dlt schema) lands amount as text: a type change against raw.
    other = dest.pipeline("b", pipelines_dir=str(tmp_path / "b"))
    typed = dest.run(other, dlt.resource([{"id": 2, "amount": "x"}], name="orders")).loads_ids[0]
    outcomes = promote_landing(dest, "orders", io_manager=io, keys={"orders": ["id"]})
    assert statuses(outcomes) == [(first, "promoted"), (typed, "quarantined")]
    assert outcomes[1].reasons == [
        "lake.raw_landed.orders: column 'amount' is BIGINT in raw and VARCHAR in this load; rule "
        "raw_validated freezes column types in raw (relax it with the line `raw_validated = false` under [rules] "
        f"in {cfg})"
    ]
    dupes = dest.run(dest.pipeline("c", pipelines_dir=str(tmp_path / "c")),
                     dlt.resource([{"id": 1, "amount": 5}, {"id": 7, "amount": 7}, {"id": 7, "amount": 8}], name="orders"))
    outcomes = promote_landing(dest, "orders", io_manager=io, keys={"orders": ["id"]}, skip_loads=[typed])
    assert statuses(outcomes) == [(typed, "skipped"), (dupes.loads_ids[0], "quarantined")]
    assert outcomes[1].reasons == [
        "lake.raw_landed.orders: 1 value(s) of key (id) appear more than once in the load",
        "lake.raw_landed.orders: 1 value(s) of key (id) are in raw already",
    ]
    assert raw_rows(cfg) == [(1, 10)]


def test_a_load_without_its_marker_is_reported_unfinished_and_promoted_once_dlt_finishes_it(tmp_path: Path) -> None:
    cfg, io = setup(tmp_path)
    dest = srdp_dlt.destination("lake", config=cfg, layer="landing")
    pipeline = dest.pipeline("shop", pipelines_dir=str(tmp_path / "p"))
    source = [order(1)]
    first = dest.run(pipeline, orders_resource(source)).loads_ids[0]
    source.append(order(2))
    second = dest.run(pipeline, orders_resource(source)).loads_ids[0]
    # As after a crash between dlt's state file and its marker: data and state, no marker.
    marker = tmp_path / "landing" / "landing" / "_dlt_loads" / f"shop__{second}.jsonl"
    saved = marker.read_bytes()
    marker.unlink()

    outcomes = promote_landing(dest, "orders", CHILDREN, io_manager=io)
    assert statuses(outcomes) == [(first, "promoted"), (second, "unfinished")]
    assert outcomes[1].reasons == [
        f"load {second} has no _dlt_loads marker (orders, orders__items; 1 state file(s)): dlt stopped before "
        "finishing it or is still writing; it is not promoted until dlt finishes it (the pipeline's next run "
        "retries a pending package)"
    ]
    assert raw_rows(cfg) == [(1, 10)]
    # Retention deletes the promoted load's data, marker and (older) state file; it keeps the
    # unfinished load whole: it is the watermark.
    zone = tmp_path / "landing" / "landing"
    before = files_under(zone)
    report = landing_retention(dest, io_manager=io, older_than=dt.timedelta(0))
    assert report.watermark == second
    gone = [f for f in before if first in f]
    assert len(gone) == 4  # orders, orders__items, marker, state file
    assert sorted(str(Path(p).relative_to(zone)) for p in report.deleted) == gone
    assert files_under(zone) == [f for f in before if f not in gone]
    marker.write_bytes(saved)
    assert statuses(promote_landing(dest, "orders", CHILDREN, io_manager=io)) == [(second, "promoted")]
    assert raw_rows(cfg) == [(1, 10), (2, 20)]
    assert raw_rows(cfg, "orders__items") == expected_items([1, 2])


def test_a_tenant_project_lands_in_its_own_folder_and_promotes_into_its_own_dataset(tmp_path: Path) -> None:
    cfg, io = setup(tmp_path, extra='project = "acme"')
    dest = srdp_dlt.destination("lake", config=cfg, layer="landing")
    assert (dest.dataset_name, dest.promote_into) == ("acme_landing", "acme_raw_landed")
    loaded = dest.run(dest.pipeline("shop", pipelines_dir=str(tmp_path / "p")), orders_resource([order(1), order(2)]))
    folder = tmp_path / "landing" / "acme_landing"
    (data,) = (folder / "orders").glob("*.parquet")
    assert pq.read_table(data).num_rows == 2 and data.name.startswith(loaded.loads_ids[0])
    assert statuses(promote_landing(dest, "orders", CHILDREN, io_manager=io)) == [(loaded.loads_ids[0], "promoted")]
    assert raw_rows(cfg, schema="acme_raw_landed") == [(1, 10), (2, 20)]


def test_landing_pipelines_are_the_helpers_own_and_load_parquet(tmp_path: Path) -> None:
    cfg, _ = setup(tmp_path)
    dest = srdp_dlt.destination("lake", config=cfg, layer="landing")
    assert dest.load_arguments() == {"loader_file_format": "parquet"}
    with pytest.raises(srdp_dlt.SrdpDltError) as refused:
        dest.load_arguments(loader_file_format="jsonl")
    assert str(refused.value) == (
        "srdp.ingest.dlt: the landing zone of catalog 'lake' keeps parquet files (the promotion reads them), "
        "and run() is given loader_file_format='jsonl'; leave loader_file_format out"
    )
    elsewhere = dlt.pipeline("shop", destination=dlt.destinations.filesystem(bucket_url=str(tmp_path / "elsewhere")),
                             dataset_name="landing", pipelines_dir=str(tmp_path / "p"))
    with pytest.raises(srdp_dlt.SrdpDltError) as refused:
        dest.run(elsewhere, orders_resource([order(1)]))
    assert str(refused.value) == (
        "srdp.ingest.dlt: pipeline 'shop' (dlt.destinations.filesystem, dataset 'landing') does not load into "
        f"the landing zone file://{tmp_path}/landing/landing/ of catalog 'lake'; build it with "
        "srdp.ingest.dlt.destination('lake', layer='landing').pipeline(...)"
    )
    # The strict way and the landing zone in one project: raw stays dlt's, with its rules.
    strict = srdp_dlt.destination("lake", config=cfg)
    assert (strict.destination_type, strict.dataset_name, strict.write_disposition) == ("ducklake", "raw", "append")


def test_landing_inside_the_data_path_and_the_reverse_are_refused_when_the_file_is_read(tmp_path: Path) -> None:
    inside = write_config(tmp_path / "inside", LANDING_TOML.format(landing="data/lake/landing", extra=""))
    around = write_config(tmp_path / "around", LANDING_TOML.format(landing="data", extra=""))
    for cfg in (inside, around):
        con = srdp.connect(config=cfg)
        try:
            with pytest.raises(Exception) as refused:
                con.execute("SELECT * FROM srdp_catalogs()").fetchall()
        finally:
            con.close()
        message = str(refused.value)
        assert f"{cfg}:4: key 'catalogs.lake.landing_path'" in message, message
        assert "either would let one side delete the other's files" in message, message
