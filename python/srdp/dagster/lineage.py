"""One asset graph from physical names: how srdp's dlt, dbt and IO manager assets meet.

Every table in the lake has one physical name, ``<catalog>.<schema>.<table>`` from
``srdp_table_name`` (``lake.raw.orders``). srdp's translators and :func:`srdp_table` give each
asset that name as ``dagster/table_name`` and, unless a key was set explicitly, an asset key
made of the name's parts (``["lake", "raw", "orders"]``). A dbt source of ``lake.raw.orders``
therefore has the very key of the dlt asset that loads it, and an IO manager asset reading a dbt
model names its input by the model's physical name: the graph joins on names, with no phantom
node in between.

>>> orders = srdp_table("lake", "curated", "orders_clean", config="srdp.toml")
>>> orders.key, orders.metadata
(AssetKey(['lake', 'curated', 'orders_clean']), {'dagster/table_name': 'lake.curated.orders_clean'})
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import dagster as dg

import srdp

__all__ = [
    "TABLE_NAME_KEY",
    "SrdpTable",
    "defined_catalogs",
    "explicit_key",
    "physical_table_names",
    "srdp_table",
    "table_asset_key",
]

#: Definition metadata naming an asset's physical table (Dagster's ``TableMetadataSet.table_name``).
TABLE_NAME_KEY = "dagster/table_name"

Triple = tuple[str, str, str]


def table_asset_key(table_name: str) -> dg.AssetKey:
    """The asset key of a physical name: its parts (``lake.raw.orders`` -> ``lake/raw/orders``)."""
    parts = table_name.split(".")
    if len(parts) != 3 or not all(parts):
        raise ValueError(f"{table_name!r} is not a physical table name <catalog>.<schema>.<table>")
    return dg.AssetKey(parts)


@dataclass(frozen=True)
class SrdpTable:
    """A physical table as Dagster sees it: ``name``, its ``key`` and its definition ``metadata``."""

    name: str

    @property
    def key(self) -> dg.AssetKey:
        return table_asset_key(self.name)

    @property
    def metadata(self) -> dict[str, Any]:
        return {TABLE_NAME_KEY: self.name}


def physical_table_names(config: str | os.PathLike[str] | None, tables: Iterable[Triple]) -> dict[Triple, str]:
    """``srdp_table_name`` of each (catalog, schema, table), on one srdp connection.

    A catalog that ``config`` does not define is an error with srdp's message."""
    wanted = list(dict.fromkeys(tables))
    if not wanted:
        return {}
    con = srdp.connect(config=config)
    try:
        return {t: str(srdp.call(con, "srdp_table_name", *t)[0]["qualified_name"]) for t in wanted}
    finally:
        con.close()


def defined_catalogs(config: str | os.PathLike[str] | None) -> frozenset[str]:
    """The catalogs ``config`` defines (``srdp_catalogs()``)."""
    con = srdp.connect(config=config)
    try:
        return frozenset(str(row["catalog"]) for row in srdp.call(con, "srdp_catalogs"))
    finally:
        con.close()


def srdp_table(catalog: str, schema: str, table: str, *, config: str | os.PathLike[str] | None = None) -> SrdpTable:
    """The physical table ``catalog.schema.table`` from ``srdp_table_name`` (the catalog must be
    defined in ``config``): give an IO manager asset ``key=t.key, metadata=t.metadata``, and name
    an input by ``dg.AssetIn(key=t.key)``, so the graph joins before anything is materialized."""
    return SrdpTable(physical_table_names(config, [(catalog, schema, table)])[(catalog, schema, table)])


def explicit_key(meta: Mapping[str, Any]) -> dg.AssetKey | None:
    """A key set by hand in dbt's ``meta: {dagster: {asset_key: [...]}}``, else None."""
    configured = (meta.get("dagster") or {}).get("asset_key")
    return dg.AssetKey(list(configured)) if configured else None
