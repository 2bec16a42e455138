"""Exactly once whatever the spelling of the landing zone. The ledger keys loads by the zone's
canonical identity (``srdp.locations.canonical``), so one srdp.toml reached through a symlinked
folder (a relative ``landing_path``, absolute lake paths: both spellings open the same lake and
the same landing folder) promotes each load once; a ledger an older srdp wrote under another
spelling counts as the zone's, and is rewritten to the canonical key by the next promotion.
Real dlt, real DuckLake on SQLite; raw read back through srdp's attach.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

import srdp
import srdp.ingest.dlt as srdp_dlt
from landing_support import checksum, files_under, order, orders_resource, raw_rows
from srdp.dagster import SrdpIOManager
from srdp.ingest import landing_retention, promote_landing

TOML = """
[catalogs.lake]
metadata = "sqlite:{root}/catalog/lake.sqlite"
data_path = "{root}/data/lake"
landing_path = "landing"
promote_into = "raw_landed"

[catalogs.lake.schemas.raw_landed]
writer = "io_manager"
layer = "raw"
"""


def two_spellings(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(real/srdp.toml, link/srdp.toml, the landing dataset folder); link -> real."""
    root = Path(os.path.realpath(tmp_path)) / "real"
    root.mkdir()
    (root / "srdp.toml").write_text(TOML.format(root=root))
    link = root.parent / "link"
    link.symlink_to(root)
    return root / "srdp.toml", link / "srdp.toml", root / "landing" / "landing"


def statuses(outcomes: list[Any]) -> list[tuple[str, str]]:
    return [(o.load_id, o.status) for o in outcomes]


def ledger(cfg: Path) -> list[tuple[str, str, str, str]]:
    """(landing, table, load id, status) of every ledger row, sorted."""
    con = srdp.connect(config=cfg)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake')").fetchall()
        return con.execute(
            "SELECT landing, table_name, load_id, status FROM lake.raw_landed._srdp_landing_loads ORDER BY ALL"
        ).fetchall()
    finally:
        con.close()


def test_one_landing_zone_through_two_spellings_is_promoted_once(tmp_path: Path) -> None:
    real_cfg, link_cfg, zone = two_spellings(tmp_path)
    real = srdp_dlt.destination("lake", config=real_cfg, layer="landing")
    link = srdp_dlt.destination("lake", config=link_cfg, layer="landing")
    assert real.landing_url != link.landing_url  # two spellings of one folder
    source = [order(i) for i in range(1, 6)]
    load = real.run(real.pipeline("shop", pipelines_dir=str(tmp_path / "p")), orders_resource(source)).loads_ids[0]
    landed = [(r["id"], r["amount"]) for r in source]

    assert statuses(promote_landing(real, "orders", io_manager=SrdpIOManager(config_path=str(real_cfg)))) == [
        (load, "promoted")]
    assert promote_landing(link, "orders", io_manager=SrdpIOManager(config_path=str(link_cfg))) == []
    in_raw = raw_rows(real_cfg)
    assert (len(in_raw), checksum(in_raw)) == (len(landed), checksum(landed))
    assert ledger(real_cfg) == [
        (f"file://{zone}/", "orders", load, "claim"), (f"file://{zone}/", "orders", load, "promoted")]


def test_a_ledger_written_under_another_spelling_counts_and_is_migrated(tmp_path: Path) -> None:
    real_cfg, link_cfg, zone = two_spellings(tmp_path)
    real = srdp_dlt.destination("lake", config=real_cfg, layer="landing")
    link = srdp_dlt.destination("lake", config=link_cfg, layer="landing")
    real_io, link_io = SrdpIOManager(config_path=str(real_cfg)), SrdpIOManager(config_path=str(link_cfg))
    pipeline = real.pipeline("shop", pipelines_dir=str(tmp_path / "p"))
    source = [order(i) for i in range(1, 6)]
    first = real.run(pipeline, orders_resource(source)).loads_ids[0]
    assert statuses(promote_landing(link, "orders", ["orders__items"], io_manager=link_io)) == [(first, "promoted")]

    # The ledger as srdp before the canonical key wrote it: keyed by the URL as the zone was
    # spelled (here through the symlink, with dlt's file:// form), one row per promoted table.
    old_key = link.landing_url
    assert old_key == f"file://{link_cfg.parent}/landing/landing/"
    con = srdp.connect(config=real_cfg)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
        con.execute("UPDATE lake.raw_landed._srdp_landing_loads SET landing = ?", [old_key])
        con.execute("DELETE FROM lake.raw_landed._srdp_landing_loads WHERE table_name <> 'orders'")
    finally:
        con.close()
    assert {row[0] for row in ledger(real_cfg)} == {old_key}

    # Neither spelling promotes the load again.
    assert promote_landing(real, "orders", ["orders__items"], io_manager=real_io) == []
    assert promote_landing(link, "orders", ["orders__items"], io_manager=link_io) == []
    assert raw_rows(real_cfg) == [(i, i * 10) for i in range(1, 6)]
    # Retention through the other spelling counts the old rows: the recorded table's data goes;
    # the child table, which an old ledger does not name, stays and holds the watermark.
    before = files_under(zone)
    report = landing_retention(real, io_manager=real_io, older_than=dt.timedelta(0), dry_run=True)
    assert report.watermark == first
    assert sorted(str(Path(p).relative_to(zone)) for p in report.deleted) == [
        f for f in before if f.startswith("orders/")]

    # The next promotion records its load under the canonical key and rewrites the old rows to it,
    # in its own transaction.
    source += [order(6), order(7)]
    second = real.run(pipeline, orders_resource(source)).loads_ids[0]
    assert statuses(promote_landing(real, "orders", ["orders__items"], io_manager=real_io)) == [(second, "promoted")]
    assert promote_landing(link, "orders", ["orders__items"], io_manager=link_io) == []
    key = f"file://{zone}/"
    assert ledger(real_cfg) == sorted([
        (key, "orders", first, "promoted"),
        (key, "orders", second, "claim"), (key, "orders", second, "promoted"),
        (key, "orders__items", second, "claim"), (key, "orders__items", second, "promoted"),
    ])
    in_raw = raw_rows(real_cfg)
    assert (len(in_raw), checksum(in_raw)) == (7, checksum([(i, i * 10) for i in range(1, 8)]))
