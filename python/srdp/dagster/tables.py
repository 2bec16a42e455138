"""Which DuckLake table an asset is, and which rows of it a partition is (pure).

Table resolution, first match wins (the platform's lineage rule: the physical name, then the
asset key):

1. the asset's definition metadata ``dagster/table_name``: ``lake.analytics.orders`` (or
   ``analytics.orders`` in the IO manager's catalog);
2. the asset key: ``["analytics", "orders"]`` -> schema ``analytics``, table ``orders`` (longer
   keys use their last two parts);
3. a one-part key takes its schema from the metadata key ``schema``, else the IO manager's
   ``schema`` setting.

A partition slice is a SQL condition with bound parameters over the ``partition_expr``
metadata: a time window is ``expr >= ? AND expr < ?``, static keys ``expr IN (?, ...)``, and
multi-partitions one condition per dimension for each key, OR-ed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

__all__ = ["IOManagerError", "Slice", "TableRef", "quote", "resolve_table", "slice_condition"]

#: Definition-metadata keys the IO manager reads.
TABLE_NAME_KEY = "dagster/table_name"
SCHEMA_KEY = "schema"
PARTITION_EXPR_KEY = "partition_expr"


class IOManagerError(Exception):
    """A write or read the IO manager refuses, with what to do about it."""


def quote(name: str) -> str:
    """A SQL identifier, double-quoted with embedded quotes doubled."""
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class TableRef:
    """A DuckLake table: the catalog alias, its schema and its name."""

    catalog: str
    schema: str
    table: str

    @property
    def name(self) -> str:
        """The physical name lineage uses: ``lake.analytics.orders``."""
        return f"{self.catalog}.{self.schema}.{self.table}"

    @property
    def sql(self) -> str:
        """The quoted, fully qualified name for SQL."""
        return f"{quote(self.catalog)}.{quote(self.schema)}.{quote(self.table)}"


def resolve_table(
    catalog: str,
    asset_key: Sequence[str],
    metadata: Mapping[str, Any],
    default_schema: str | None,
) -> TableRef:
    """The table an asset reads and writes (see the module doc for the order)."""
    named = metadata.get(TABLE_NAME_KEY)
    if named is not None:
        parts = str(named).split(".")
        if len(parts) == 3:
            if parts[0] != catalog:
                raise IOManagerError(
                    f"dagster/table_name {named!r} names catalog {parts[0]!r}, but this IO manager "
                    f"writes catalog {catalog!r}; give the asset an io_manager_key for that catalog"
                )
            parts = parts[1:]
        if len(parts) != 2 or not all(parts):
            raise IOManagerError(
                f"dagster/table_name {named!r} is not <catalog>.<schema>.<table> or <schema>.<table>"
            )
        return TableRef(catalog, parts[0], parts[1])
    path = list(asset_key)
    if not path:
        raise IOManagerError("the output has no asset key and no dagster/table_name metadata")
    if len(path) >= 2:
        return TableRef(catalog, path[-2], path[-1])
    schema = metadata.get(SCHEMA_KEY) or default_schema
    if not schema:
        raise IOManagerError(
            f"asset {path[0]!r} has a one-part key: give it a key prefix (key_prefix=['analytics']), "
            "a 'schema' or 'dagster/table_name' metadata entry, or set schema= on SrdpIOManager"
        )
    return TableRef(catalog, str(schema), path[0])


@dataclass(frozen=True)
class Slice:
    """A SQL condition with its parameters; ``condition`` None means the whole table."""

    condition: str | None = None
    params: list[Any] = field(default_factory=list)
    description: str = "whole table"


def _timestamp(moment: datetime) -> str:
    utc = moment.astimezone(timezone.utc) if moment.tzinfo else moment
    return utc.strftime("%Y-%m-%d %H:%M:%S")


def time_window_condition(expr: str, start: datetime, end: datetime) -> tuple[str, list[Any]]:
    """``expr >= start AND expr < end`` (UTC timestamps, compared in the column's type)."""
    return f"({expr}) >= CAST(? AS TIMESTAMP) AND ({expr}) < CAST(? AS TIMESTAMP)", [
        _timestamp(start),
        _timestamp(end),
    ]


def static_condition(expr: str, keys: Sequence[str]) -> tuple[str, list[Any]]:
    """``expr IN (?, ...)`` over the partition keys."""
    marks = ", ".join("?" for _ in keys)
    return f"CAST(({expr}) AS VARCHAR) IN ({marks})", list(keys)


def slice_condition(
    partition_expr: str | Mapping[str, str] | None,
    time_window: tuple[datetime, datetime] | None,
    keys: Sequence[str | Mapping[str, str]],
    dimension_windows: Mapping[str, Mapping[str, tuple[datetime, datetime]]] | None = None,
) -> Slice:
    """The rows a materialization of ``keys`` owns.

    ``time_window``: the window of a time-partitioned asset (ranges included). ``keys``: the
    partition keys (strings), or for multi-partitions their ``{dimension: key}`` mappings;
    ``dimension_windows[dimension][key]`` is the time window of a key of a time dimension.
    """
    if partition_expr is None:
        raise IOManagerError(
            "a partitioned asset needs 'partition_expr' metadata: the column (or SQL expression) "
            "that holds the partition, e.g. metadata={'partition_expr': 'order_date'}; for "
            "multi-partitions one per dimension: {'partition_expr': {'date': 'day', 'region': 'region'}}"
        )
    if isinstance(partition_expr, Mapping):
        ors: list[str] = []
        params: list[Any] = []
        for key in keys:
            if not isinstance(key, Mapping):
                raise IOManagerError("partition_expr is a mapping, but the asset is not multi-partitioned")
            ands: list[str] = []
            for dimension, value in sorted(key.items()):
                expr = partition_expr.get(dimension)
                if expr is None:
                    raise IOManagerError(
                        f"partition_expr has no entry for dimension {dimension!r} (has: "
                        f"{', '.join(sorted(partition_expr))})"
                    )
                window = (dimension_windows or {}).get(dimension, {}).get(value)
                if window is not None:
                    condition, values = time_window_condition(expr, *window)
                else:
                    condition, values = static_condition(expr, [value])
                ands.append(condition)
                params.extend(values)
            ors.append("(" + " AND ".join(ands) + ")")
        described = ", ".join("|".join(str(v) for _, v in sorted(k.items())) for k in keys if isinstance(k, Mapping))
        return Slice("(" + " OR ".join(ors) + ")", params, f"partitions {described}")
    if time_window is not None:
        condition, params = time_window_condition(partition_expr, *time_window)
        start, end = time_window
        return Slice(condition, params, f"time window [{_timestamp(start)}, {_timestamp(end)})")
    flat = [str(k) for k in keys]
    condition, params = static_condition(partition_expr, flat)
    return Slice(condition, params, f"partitions {', '.join(flat)}")
