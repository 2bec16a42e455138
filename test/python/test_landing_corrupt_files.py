"""A landed file the promotion cannot read quarantines its load, with a reason naming the load and
the file, like any other invalid load.

Real dlt 1.31 lands three loads of an incremental source in the landing folder; the first is
promoted; then the middle load's files are damaged on disk as a crash, a copy gone wrong or a
stray writer would leave them (truncated or zero-byte Parquet, a text file, a ``.jsonl`` file, each
named ``<load_id>.<file_id>.<ext>`` as dlt names its files). The promotion quarantines that load
(nothing of it reaches raw, its valid files included), the load after it waits, and ``skip_loads``
moves on. Raw is read back through srdp's attach (row count and checksum); in Dagster the reason
is in the asset check's metadata and the run succeeds.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dagster as dg
import pyarrow.parquet as pq
import pytest

import srdp.ingest.dlt as srdp_dlt
from conftest import write_config
from iomanager_support import _close_io_sessions_after_test  # noqa: F401
from landing_support import LANDING_TOML, checksum, expected_items, order, orders_resource, raw_rows
from srdp.dagster import SrdpIOManager, srdp_landing_assets
from srdp.ingest import promote_landing

CHILDREN = ["orders__items"]

#: What the promotion says of every unreadable file, after the file's own problem.
ADVICE = "replace or remove the file and rerun, or list the load in skip_loads"


def statuses(outcomes: list[Any]) -> list[tuple[str, str]]:
    return [(o.load_id, o.status) for o in outcomes]


def _only(folder: Path, load_id: str) -> Path:
    (found,) = folder.glob(f"{load_id}.*.parquet")
    return found


def truncate(folder: Path, load_id: str) -> tuple[str, str]:
    """The load's Parquet file cut in half (a copy or an upload that stopped)."""
    good = _only(folder, load_id)
    data = good.read_bytes()
    good.write_bytes(data[: len(data) // 2])
    return good.name, (
        "which Parquet cannot read (truncated or corrupt: Parquet magic bytes not found in footer. "
        "Either the file is corrupted or this is not a parquet file.)"
    )


def empty(folder: Path, load_id: str) -> tuple[str, str]:
    """The load's Parquet file with zero bytes (a file created and never written)."""
    good = _only(folder, load_id)
    good.write_bytes(b"")
    return good.name, "which is empty (0 bytes)"


def text(folder: Path, load_id: str) -> tuple[str, str]:
    """A text file beside the load's good Parquet file, named like dlt's files."""
    stray = folder / f"{load_id}.0123456789.txt"
    stray.write_text("exported by hand\n")
    return stray.name, (
        "which is not Parquet (.txt): srdp's landing zone is loaded as Parquet only, so it is not this "
        "zone's dlt output"
    )


def jsonl(folder: Path, load_id: str) -> tuple[str, str]:
    """The load's rows as dlt's jsonl format would write them, in place of its Parquet file."""
    good = _only(folder, load_id)
    rows = pq.read_table(good).to_pylist()
    name = good.name.removesuffix(".parquet") + ".jsonl"
    (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    good.unlink()
    return name, (
        "which is not Parquet (.jsonl): srdp's landing zone is loaded as Parquet only, so it is not this "
        "zone's dlt output"
    )


DAMAGE: dict[str, tuple[str, Callable[[Path, str], tuple[str, str]]]] = {
    "truncated_parquet": ("orders", truncate),
    "zero_byte_parquet": ("orders", empty),
    "text_file": ("orders", text),
    "jsonl_file": ("orders", jsonl),
    "truncated_child_parquet": ("orders__items", truncate),
}


def land(tmp_path: Path) -> tuple[Path, Any, SrdpIOManager, list[str]]:
    """Three dlt loads (orders 1-2, 3-4, 5); the first promoted. Returns the load ids."""
    cfg = write_config(tmp_path, LANDING_TOML.format(landing="landing", extra=""))
    io = SrdpIOManager(config_path=str(cfg))
    dest = srdp_dlt.destination("lake", config=cfg, layer="landing")
    pipeline = dest.pipeline("shop", pipelines_dir=str(tmp_path / "p"))
    source = [order(1), order(2)]
    loads = [dest.run(pipeline, orders_resource(source)).loads_ids[0]]
    assert statuses(promote_landing(dest, "orders", CHILDREN, io_manager=io)) == [(loads[0], "promoted")]
    source += [order(3), order(4)]
    loads.append(dest.run(pipeline, orders_resource(source)).loads_ids[0])
    source.append(order(5))
    loads.append(dest.run(pipeline, orders_resource(source)).loads_ids[0])
    return cfg, dest, io, loads


def raw_state(cfg: Path) -> tuple[int, str, int, str]:
    """Row count and checksum of raw's orders and orders__items."""
    orders, items = raw_rows(cfg), raw_rows(cfg, "orders__items")
    return len(orders), checksum(orders), len(items), checksum(items)


def expected_state(ids: list[int]) -> tuple[int, str, int, str]:
    orders, items = [(i, i * 10) for i in ids], expected_items(ids)
    return len(orders), checksum(orders), len(items), checksum(items)


@pytest.mark.parametrize("case", list(DAMAGE))
def test_an_unreadable_landed_file_quarantines_its_load_and_skip_loads_moves_on(tmp_path: Path, case: str) -> None:
    cfg, dest, io, (first, bad, after) = land(tmp_path)
    table, damage = DAMAGE[case]
    name, problem = damage(tmp_path / "landing" / "landing" / table, bad)
    before = raw_state(cfg)
    assert before == expected_state([1, 2])

    reason = (
        f"lake.raw_landed.{table}: load {bad} has file file://{tmp_path}/landing/landing/{table}/{name}, "
        f"{problem}; {ADVICE}"
    )
    for _ in range(2):  # quarantined again on the next run: nothing changes until the project decides
        outcomes = promote_landing(dest, "orders", CHILDREN, io_manager=io)
        assert statuses(outcomes) == [(bad, "quarantined"), (after, "waiting")]
        assert outcomes[0].reasons == [reason]
        assert outcomes[1].reasons == [f"waits behind quarantined load {bad}"]
        assert raw_state(cfg) == before

    outcomes = promote_landing(dest, "orders", CHILDREN, io_manager=io, skip_loads=[bad])
    assert statuses(outcomes) == [(bad, "skipped"), (after, "promoted")]
    assert raw_rows(cfg) == [(1, 10), (2, 20), (5, 50)]
    assert raw_state(cfg) == expected_state([1, 2, 5])


def test_parquet_files_of_one_load_with_conflicting_column_types_quarantine_it(tmp_path: Path) -> None:
    cfg, dest, io, (first, bad, after) = land(tmp_path)
    folder = tmp_path / "landing" / "landing" / "orders"
    good = _only(folder, bad)
    table = pq.read_table(good)
    stray = folder / f"{bad}.zzzzzzzzzz.parquet"  # read after the good file: dlt's file ids are hex
    amount = table.schema.get_field_index("amount")
    pq.write_table(table.set_column(amount, "amount", table.column("amount").cast("string")), stray)
    before = raw_state(cfg)

    outcomes = promote_landing(dest, "orders", CHILDREN, io_manager=io)
    assert statuses(outcomes) == [(bad, "quarantined"), (after, "waiting")]
    assert outcomes[0].reasons == [
        f"lake.raw_landed.orders: load {bad} has file file://{tmp_path}/landing/landing/orders/{stray.name}, "
        f"whose columns do not fit the load's other files of this table (Unable to merge: Field amount has "
        f"incompatible types: int64 vs string); {ADVICE}"
    ]
    assert raw_state(cfg) == before


def test_in_dagster_the_reason_is_in_the_check_and_the_blocking_check_fails_the_step(tmp_path: Path) -> None:
    """The landing_loads check is blocking (docs/landing-zone.md): a quarantined load fails the
    promotion step, so nothing downstream runs on stale input; the reason is in the check."""
    cfg, dest, io, (first, bad, after) = land(tmp_path)
    name, problem = truncate(tmp_path / "landing" / "landing" / "orders", bad)
    before = raw_state(cfg)
    promoted = srdp_landing_assets(dest, {"orders": CHILDREN}, keys={"orders": ["id"]})

    result = dg.materialize(promoted, resources={"io_manager": io}, raise_on_error=False)
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert "1 blocking asset check failed with ERROR severity" in str(failure.event_specific_data.error)
    (check,) = result.get_asset_check_evaluations()
    assert (check.check_name, check.passed, check.severity) == ("landing_loads", False, dg.AssetCheckSeverity.ERROR)
    assert check.metadata["quarantined"].value == (
        f"{bad}: lake.raw_landed.orders: load {bad} has file file://{tmp_path}/landing/landing/orders/{name}, "
        f"{problem}; {ADVICE}"
    )
    assert check.metadata["waiting"].value == f"{after}: waits behind quarantined load {bad}"
    by_key = {m.asset_key.to_user_string(): m.metadata for m in result.asset_materializations_for_node(
        "promote_lake_landing_orders")}
    assert by_key["lake/raw_landed/orders"]["srdp/rows_promoted"].value == 0
    assert raw_state(cfg) == before
