"""Which DuckLake table an asset is (pure); the slice and naming types live in :mod:`srdp.lake`.

Table resolution, first match wins (the table is the asset key's last part, or an op output's name):

1. the definition metadata ``dagster/table_name``: ``lake.analytics.orders`` (or
   ``analytics.orders`` in the IO manager's catalog); a metadata ``schema`` beside it that names
   another schema is refused (srdp does not guess which one was meant);
2. the metadata ``schema`` (as dagster-duckdb reads it): schema of the table named by the key's
   last part;
3. the asset key: ``["analytics", "orders"]`` -> schema ``analytics``, table ``orders``; a key of
   three parts is ``[<catalog>, <schema>, <table>]`` (``["lake", "raw", "orders"]``, the keys srdp's
   own assets carry), and a catalog other than the IO manager's is refused like the same mismatch
   in ``dagster/table_name`` (a key never moves a write into another catalog). A key of four parts
   or more is refused: nothing says which of its parts is the catalog (a team prefix? a catalog?),
   and srdp does not guess where a write goes; ``dagster/table_name`` names such an asset's table;
4. the IO manager's ``schema`` setting, for a one-part key or an op output.

An op output's key is its ``table`` metadata or its output name; its refusals name it as an op
output, with its step and output name (:class:`srdp.dagster.op_outputs.OpOutput`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from srdp.lake.errors import LakeError
from srdp.lake.names import TableRef, quote
from srdp.lake.slices import Slice, check_partition_expr, partition_expr_problem, slice_condition

__all__ = [
    "IOManagerError",
    "Slice",
    "TableRef",
    "check_partition_expr",
    "partition_expr_problem",
    "quote",
    "resolve_table",
    "slice_condition",
]

#: Definition-metadata keys the IO manager reads.
TABLE_NAME_KEY = "dagster/table_name"
SCHEMA_KEY = "schema"
PARTITION_EXPR_KEY = "partition_expr"

#: The IO manager's refusals: the class of :mod:`srdp.lake`'s (one class, caught either way).
IOManagerError = LakeError


def resolve_table(
    catalog: str,
    asset_key: Sequence[str],
    metadata: Mapping[str, Any],
    default_schema: str | None,
    op_output: str | None = None,
) -> TableRef:
    """The table an asset (or op output) reads and writes (see the module doc for the order).
    ``op_output``: what an op output is called in refusals (``op output 'result' of step
    'load'``); None for an asset."""
    named = metadata.get(TABLE_NAME_KEY)
    schema = metadata.get(SCHEMA_KEY)
    path = list(asset_key)
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
        if schema is not None and str(schema) != parts[0]:
            raise IOManagerError(
                f"{op_output or 'asset ' + repr('/'.join(path))}: metadata 'schema' ({str(schema)!r}) and 'dagster/table_name' "
                f"({str(named)!r}) name different schemas; give one of them"
            )
        return TableRef(catalog, parts[0], parts[1])
    if not path:
        raise IOManagerError("the output has no asset key and no dagster/table_name metadata")
    key = "/".join(path)
    if len(path) > 3:
        raise IOManagerError(
            f"asset key {key!r} has {len(path)} parts; the IO manager reads a key as [<schema>, <table>] "
            "or [<catalog>, <schema>, <table>]: give the asset a shorter key or a 'dagster/table_name' "
            "metadata entry (<catalog>.<schema>.<table>)"
        )
    if len(path) == 3 and path[0] != catalog:
        raise IOManagerError(
            f"asset key {key!r} names catalog {path[0]!r}, but this IO manager writes catalog "
            f"{catalog!r}; give the asset an io_manager_key for that catalog (a key of three parts "
            "is [<catalog>, <schema>, <table>])"
        )
    if schema:
        return TableRef(catalog, str(schema), path[-1])
    if len(path) > 1:
        return TableRef(catalog, path[-2], path[-1])
    if not default_schema and op_output is not None:
        raise IOManagerError(
            f"{op_output} has no schema: give it a 'schema' or 'dagster/table_name' metadata entry "
            "(dg.Out(metadata={'schema': 'analytics'})), or set schema= on SrdpIOManager"
        )
    if not default_schema:
        raise IOManagerError(
            f"asset {path[0]!r} has a one-part key: give it a key prefix (key_prefix=['analytics']), "
            "a 'schema' or 'dagster/table_name' metadata entry, or set schema= on SrdpIOManager"
        )
    return TableRef(catalog, default_schema, path[0])
