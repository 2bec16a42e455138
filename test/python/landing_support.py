"""Shared pieces of the landing-zone tests: the definition, an incremental dlt source whose rows
the test controls, and independent readers of raw (srdp attach + SQL) and of the landing folder
(the file system, not srdp)."""

from __future__ import annotations

import os

os.environ["RUNTIME__DLTHUB_TELEMETRY"] = "false"  # offline platform: dlt must not phone home

import hashlib  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import dlt  # noqa: E402

import srdp  # noqa: E402

LANDING_TOML = """
[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/lake"
landing_path = "{landing}"
promote_into = "raw_landed"
{extra}

[catalogs.lake.schemas.raw]
writer = "dlt"
layer = "raw"

[catalogs.lake.schemas.raw_landed]
writer = "io_manager"
layer = "raw"

[catalogs.lake.schemas.analytics]
writer = "io_manager"
layer = "curated"
"""


def order(i: int, amount: Any = None) -> dict[str, Any]:
    return {"id": i, "amount": i * 10 if amount is None else amount, "items": [{"sku": f"s{i}-{k}"} for k in range(i % 3)]}


def orders_resource(rows: list[dict[str, Any]]) -> Any:
    """An incremental dlt resource on ``id`` over ``rows`` (read when the pipeline extracts)."""

    @dlt.resource(name="orders", write_disposition="append")
    def orders(cursor: Any = dlt.sources.incremental("id", initial_value=0)) -> Iterator[dict[str, Any]]:
        yield from (r for r in rows if r["id"] > cursor.last_value)

    return orders


def raw_rows(cfg: Path, table: str = "orders", schema: str = "raw_landed") -> list[tuple[Any, ...]]:
    """``id, amount`` (or every column of a child table) of a raw table, sorted, through srdp."""
    con = srdp.connect(config=cfg)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake')").fetchall()
        columns = "id, amount" if table == "orders" else "sku"
        return con.execute(f"SELECT {columns} FROM lake.{schema}.{table} ORDER BY ALL").fetchall()
    finally:
        con.close()


def checksum(values: list[tuple[Any, ...]]) -> str:
    return hashlib.md5("\n".join("|".join(map(str, v)) for v in sorted(values)).encode()).hexdigest()


def expected_items(ids: list[int]) -> list[tuple[str]]:
    return sorted((f"s{i}-{k}",) for i in ids for k in range(i % 3))


def files_under(folder: Path) -> list[str]:
    """Every file under ``folder``, relative, sorted (read from the disk)."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
