"""What ``srdp_definitions`` / ``add_srdp_definitions`` check when the code location loads (so
``dagster definitions validate`` fails, not the first run): the srdp.toml exists, the IO manager's
catalog is defined in it, every asset and op output the IO manager will store lands in a schema
its writer owns (``srdp_check_writer``), and no two of them (two op outputs of the jobs, or an op
output and an asset) would be stored in one table (:mod:`srdp.dagster.op_outputs`). Assets the
IO manager never stores (specs, ``Nothing`` outputs, other IO manager keys: dbt's and dlt's) are
not checked."""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Iterator
from typing import Any

import dagster as dg
import duckdb

import srdp
from srdp.dagster.op_outputs import check_op_outputs, job_op_outputs
from srdp.dagster.tables import IOManagerError, resolve_table
from srdp.lake.names import TableRef

__all__ = ["check_io_manager_definitions"]


def check_io_manager_definitions(
    where: str,
    config: str,
    catalog: str,
    assets: Iterable[Any],
    io_manager_key: str,
    writer: str = "io_manager",
    jobs: Iterable[Any] = (),
) -> None:
    """Raises ValueError naming ``where`` (the call), the file and what to do, before anything
    runs. ``jobs``: the application's jobs, whose op outputs the IO manager stores too."""
    if not os.path.isfile(config):
        raise ValueError(
            f"{where}(io_manager=True): the srdp.toml {config} does not exist; pass config= the path of the definition file"
        )
    con = srdp.connect(config=config)
    try:
        catalogs = sorted(str(r["catalog"]) for r in srdp.call(con, "srdp_catalogs"))
        if catalog not in catalogs:
            close = difflib.get_close_matches(catalog, catalogs, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ValueError(
                f"{where}(io_manager=True, catalog={catalog!r}): {config} defines no catalog {catalog!r} "
                f"(its catalogs: {', '.join(catalogs) or 'none'}{hint})"
            )
        checked: set[str] = set()

        def check_owner(what: str, table: TableRef) -> None:
            if table.schema in checked:
                return
            try:
                srdp.call(con, "srdp_check_writer", catalog, table.schema, writer)
            except duckdb.Error as error:
                raise ValueError(
                    f"{where}(io_manager=True): {what} is stored by the IO manager in {table.name}, "
                    f"and {_srdp_message(error)}"
                ) from None
            checked.add(table.schema)

        asset_tables: dict[TableRef, str] = {}
        for key, metadata in _stored_assets(assets, io_manager_key):
            try:
                table = resolve_table(catalog, key.path, metadata, None)
            except IOManagerError as error:
                raise ValueError(f"{where}(io_manager=True): {error}") from None
            check_owner(f"asset {key.to_user_string()!r}", table)
            asset_tables.setdefault(table, key.to_user_string())
        outputs = list(job_op_outputs(jobs, io_manager_key))
        for table, output in check_op_outputs(where, catalog, outputs, asset_tables).items():
            check_owner(output.described, table)
    finally:
        con.close()


def _stored_assets(assets: Iterable[Any], io_manager_key: str) -> Iterator[tuple[dg.AssetKey, dict[str, Any]]]:
    """Each asset key whose output the IO manager under ``io_manager_key`` stores, with its
    definition metadata."""
    for assets_def in assets:
        if not isinstance(assets_def, dg.AssetsDefinition) or not assets_def.is_executable:
            continue
        for key in assets_def.keys:
            if assets_def.get_io_manager_key_for_asset_key(key) != io_manager_key:
                continue
            output = assets_def.node_def.resolve_output_to_origin(assets_def.get_output_name_for_asset_key(key), None)[0]
            if output.dagster_type.is_nothing:
                continue
            yield key, dict(assets_def.specs_by_key[key].metadata or {})


def _srdp_message(error: duckdb.Error) -> str:
    """srdp's sentence without DuckDB's class prefix and its ``LINE 1:`` excerpt."""
    text = str(error).split("\n\nLINE ")[0].strip()
    for prefix in ("Binder Error: ", "Invalid Input Error: ", "IO Error: "):
        text = text.removeprefix(prefix)
    return text
