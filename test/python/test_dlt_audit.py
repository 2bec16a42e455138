"""dlt's writes through srdp.ingest.dlt carry a DuckLake commit author, so srdp_write_audit names them.

dlt 1.31 writes most of a load in autocommit mode; srdp's destination (``srdp.ingest.dlt.audited``)
runs each write in a labelled transaction. Differential: the same two loads through srdp's
destination and through dlt's plain ``ducklake`` on two identical lakes end with the same rows and
the same sequence of snapshot changes; only srdp's snapshots carry an author.
"""

from __future__ import annotations

import os

os.environ["RUNTIME__DLTHUB_TELEMETRY"] = "false"  # offline platform: dlt must not phone home

import sqlite3  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import dlt  # noqa: E402
import pytest  # noqa: E402

import srdp  # noqa: E402
import srdp.ingest.dlt as srdp_dlt  # noqa: E402
from conftest import write_config  # noqa: E402
from srdp.ingest.dlt.audited import commit_label  # noqa: E402

LAKE = """
[custom]
writers = ["ingest bot"]

[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/lake"

[catalogs.lake.schemas.raw]
writer = "{writer}"
layer = "raw"
"""


def orders(start: int, n: int) -> list[dict[str, Any]]:
    """Orders with nested items: dlt makes a child table ``orders__items``."""
    return [
        {"id": i, "customer": f"c{i % 3}", "items": [{"sku": f"s{i}-{k}", "qty": k + 1} for k in range(i % 3)]}
        for i in range(start, start + n)
    ]


def snapshots(root: Path) -> list[tuple[int, str | None, str | None, str | None, str]]:
    """(snapshot, author, message, extra_info, changes_made) of each snapshot, read with sqlite3."""
    con = sqlite3.connect(f"file:{root / 'catalog' / 'lake.sqlite'}?mode=ro", uri=True)
    try:
        return con.execute(
            "SELECT snapshot_id, author, commit_message, commit_extra_info, changes_made "
            "FROM ducklake_snapshot_changes ORDER BY snapshot_id"
        ).fetchall()
    finally:
        con.close()


def changed(changes_made: str) -> list[str]:
    """A snapshot's changes, comparable across two lakes: sorted (dlt creates a load's tables in
    no fixed order), table ids dropped from data changes (they follow that order)."""
    return sorted(p if p.startswith("created_") else p.split(":")[0] for p in changes_made.split(","))


def contents(cfg: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every user table's rows (without dlt's load and row ids), sorted."""
    con = srdp.connect(config=cfg)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake')").fetchall()
        return {
            "orders": con.sql("SELECT id, customer FROM lake.raw.orders ORDER BY ALL").fetchall(),
            "orders__items": con.sql("SELECT sku, qty FROM lake.raw.orders__items ORDER BY ALL").fetchall(),
            "_dlt_loads": con.sql("SELECT schema_name, status FROM lake.raw._dlt_loads ORDER BY ALL").fetchall(),
        }
    finally:
        con.close()


def load_twice(cfg: Path, root: Path, writer: str, plain: bool) -> list[str]:
    """Two loads of orders into raw; ``plain`` uses dlt's own ducklake destination. The load ids."""
    dest = srdp_dlt.destination("lake", config=cfg, writer=writer)
    dest.prepare()
    if plain:
        pipeline = dlt.pipeline("shop", destination=dlt.destinations.ducklake(credentials=dest.credentials()),
                                dataset_name=dest.dataset_name, pipelines_dir=str(root / "pipelines"))
    else:
        pipeline = dest.pipeline("shop", pipelines_dir=str(root / "pipelines"))
    load_ids = []
    for start in (0, 7):
        data = dlt.resource(orders(start, 7), name="orders")
        info = (pipeline.run(data, **dest.load_arguments([data])) if plain else dest.run(pipeline, data))
        assert not info.has_failed_jobs
        load_ids += info.loads_ids
    return load_ids


@pytest.mark.parametrize("writer", ["dlt", "ingest bot"])
def test_every_dlt_write_is_labelled_and_the_lake_ends_as_plain_dlt_leaves_it(tmp_path: Path, writer: str) -> None:
    srdp_root, plain_root = tmp_path / "srdp", tmp_path / "plain"
    srdp_cfg = write_config(srdp_root, LAKE.format(writer=writer))
    plain_cfg = write_config(plain_root, LAKE.format(writer=writer))

    load_ids = load_twice(srdp_cfg, srdp_root, writer, plain=False)
    load_twice(plain_cfg, plain_root, writer, plain=True)

    # Same rows, same snapshots with the same changes: labelling changed nothing but the labels.
    assert contents(srdp_cfg) == contents(plain_cfg)
    assert len(contents(srdp_cfg)["orders"]) == 14 and len(contents(srdp_cfg)["orders__items"]) == 13
    ours, theirs = snapshots(srdp_root), snapshots(plain_root)
    assert [(s, changed(c)) for s, _, _, _, c in ours] == [(s, changed(c)) for s, _, _, _, c in theirs]
    assert {(a, m) for _, a, m, _, _ in theirs} == {(None, None)}

    # srdp's snapshots: 0 (the lake created by srdp_attach_catalog) has no author, every dlt
    # write names the writer, the pipeline and one of the two loads.
    assert ours[0][1:3] == (None, None)
    dlt_writes = ours[1:]
    assert len(dlt_writes) >= 8
    for snapshot_id, author, message, extra, _ in dlt_writes:
        assert author == writer, (snapshot_id, author, message)
        load_id = next(i for i in load_ids if f" load {i} " in message)
        assert message.startswith(f"dlt pipeline shop load {load_id} "), message
        assert f'"load_id": "{load_id}"' in extra and '"pipeline_name": "shop"' in extra
    copied = {m.split(" table ")[1] for _, _, m, _, _ in dlt_writes if " load table " in m}
    assert {"orders", "orders__items"} <= copied

    # The audit: every change to raw was written by its owner, none by an unknown writer.
    con = srdp.connect(config=srdp_cfg)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake')").fetchall()
        audit = con.sql(
            "SELECT DISTINCT schema_name, author, owner, allowed, note FROM srdp_write_audit('lake', since := '1') "
            "WHERE schema_name = 'raw'").fetchall()
        tables = {t for (t,) in con.sql(
            "SELECT DISTINCT table_name FROM srdp_write_audit('lake', since := '1') WHERE table_name IS NOT NULL"
        ).fetchall()}
    finally:
        con.close()
    assert audit == [("raw", writer, writer, True, None)]
    assert tables == {"orders", "orders__items", "_dlt_loads", "_dlt_version", "_dlt_pipeline_state"}


def test_a_pipeline_on_dlts_plain_ducklake_destination_is_refused(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, LAKE.format(writer="dlt"))
    dest = srdp_dlt.destination("lake", config=cfg)
    plain = dlt.pipeline("shop", destination=dlt.destinations.ducklake(credentials=dest.credentials()),
                         dataset_name="raw", pipelines_dir=str(tmp_path / "pipelines"))
    with pytest.raises(srdp_dlt.SrdpDltError) as refused:
        dest.run(plain, dlt.resource(orders(0, 2), name="orders"))
    assert str(refused.value) == (
        "srdp.ingest.dlt: pipeline 'shop' (dlt.destinations.ducklake, dataset 'raw') does not load into "
        "lake.raw; build it with srdp.ingest.dlt.destination('lake', ...).pipeline(...)"
    )


@pytest.mark.parametrize(("tags", "label"), [
    (None, "dlt"),
    ({"operation": "update_stored_schema", "load_id": "", "pipeline_name": "p"}, "dlt pipeline p update_stored_schema"),
    ({"operation": "load", "load_id": "17.5", "pipeline_name": "p", "table": "t"}, "dlt pipeline p load 17.5 load table t"),
])
def test_commit_label(tags: dict[str, Any] | None, label: str) -> None:
    assert commit_label(tags) == label
