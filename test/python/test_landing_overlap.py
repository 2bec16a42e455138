"""Two promotions that share a landing table still promote each of its loads exactly once.

A project may promote ``orders`` with its child table ``orders__items`` and, by mistake or while
moving from one layout to the other, also promote ``orders__items`` on its own. The ledger records
every table a promotion took (the child tables too), so whichever promotion comes second leaves
out what the first took: raw holds each landed row once, in either order, and nothing landed is
left out. Real dlt 1.31 lands into a local folder; raw is read through srdp's attach.
"""

from __future__ import annotations

from pathlib import Path

import srdp.ingest.dlt as srdp_dlt
from conftest import write_config
from landing_support import LANDING_TOML, checksum, expected_items, order, orders_resource, raw_rows
from srdp.dagster import SrdpIOManager
from srdp.ingest import promote_landing

IDS = [1, 2, 3, 4, 5]
#: Rows of the child table orders__items landed for IDS (order(i) has i % 3 items).
ITEMS = len(expected_items(IDS))


def _land(tmp_path: Path) -> tuple[Path, SrdpIOManager, srdp_dlt.DltDestination, str]:
    cfg = write_config(tmp_path, LANDING_TOML.format(landing="landing", extra=""))
    dest = srdp_dlt.destination("lake", config=cfg, layer="landing")
    pipeline = dest.pipeline("shop", pipelines_dir=str(tmp_path / "p"))
    load = dest.run(pipeline, orders_resource([order(i) for i in IDS])).loads_ids[0]
    return cfg, SrdpIOManager(config_path=str(cfg)), dest, load


def test_a_child_promoted_with_its_parent_is_not_promoted_again_on_its_own(tmp_path: Path) -> None:
    cfg, io, dest, load = _land(tmp_path)
    outcomes = promote_landing(dest, "orders", ["orders__items"], io_manager=io)
    assert [(o.load_id, o.status, o.rows) for o in outcomes] == [
        (load, "promoted", {"lake.raw_landed.orders": 5, "lake.raw_landed.orders__items": ITEMS})]

    # The second promotion finds the child table in the ledger for that load: nothing to do.
    assert promote_landing(dest, "orders__items", io_manager=io) == []
    items = raw_rows(cfg, "orders__items")
    assert (len(items), checksum(items)) == (ITEMS, checksum(expected_items(IDS)))
    assert raw_rows(cfg) == [(i, i * 10) for i in range(1, 6)]


def test_a_parent_promoted_after_its_child_went_alone_promotes_only_itself(tmp_path: Path) -> None:
    cfg, io, dest, load = _land(tmp_path)
    assert [(o.status, o.rows) for o in promote_landing(dest, "orders__items", io_manager=io)] == [
        ("promoted", {"lake.raw_landed.orders__items": ITEMS})]

    outcomes = promote_landing(dest, "orders", ["orders__items"], io_manager=io)
    assert [(o.load_id, o.status, o.rows, o.reasons) for o in outcomes] == [(
        load, "promoted", {"lake.raw_landed.orders": 5},
        [f"lake.raw_landed.orders__items of load {load} is in raw already (another promotion took it); "
         "not promoted again"],
    )]
    items = raw_rows(cfg, "orders__items")
    assert (len(items), checksum(items)) == (ITEMS, checksum(expected_items(IDS)))
    assert raw_rows(cfg) == [(i, i * 10) for i in range(1, 6)]
    # A rerun of either has nothing left to do.
    assert promote_landing(dest, "orders", ["orders__items"], io_manager=io) == []
    assert promote_landing(dest, "orders__items", io_manager=io) == []
