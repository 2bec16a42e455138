"""The Dagster resources srdp's ops use: DuckDB with srdp loaded from one definition file, and the
IO manager of their outputs, which stores nothing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dagster as dg
import duckdb

import srdp

__all__ = ["NO_STORAGE_IO_MANAGER_KEY", "RESOURCE_KEY", "NoStorageIOManager", "SrdpResource"]

#: The resource key srdp's ops require.
RESOURCE_KEY = "srdp"

#: The IO manager key of srdp's own op outputs, so an application's ``io_manager`` never sees them.
NO_STORAGE_IO_MANAGER_KEY = "srdp_no_storage_io_manager"


class SrdpResource(dg.ConfigurableResource):
    """DuckDB with srdp loaded from ``config_path``; catalogs attached on request."""

    config_path: str

    def connect(self, catalogs: Sequence[str] | None = None, role: str = "writer") -> duckdb.DuckDBPyConnection:
        """A new connection with ``catalogs`` (default: every catalog of the file) attached."""
        con = srdp.connect(config=self.config_path)
        try:
            for catalog in catalogs or self.catalogs(con):
                srdp.call(con, "srdp_attach_catalog", catalog, role=role)
        except Exception:
            con.close()
            raise
        return con

    @staticmethod
    def catalogs(con: duckdb.DuckDBPyConnection) -> list[str]:
        """Every catalog of the definition, in name order."""
        return sorted(r["catalog"] for r in srdp.call(con, "srdp_catalogs"))


class NoStorageIOManager(dg.ConfigurableIOManager):
    """The IO manager of srdp's own ops (``NO_STORAGE_IO_MANAGER_KEY``): their outputs are reports
    whose numbers are in the output's metadata and the run's log; nothing is stored, and loading
    one as an input is refused (an application's ``io_manager``, which may expect assets only,
    never receives them)."""

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        return None

    def load_input(self, context: dg.InputContext) -> Any:
        upstream = context.upstream_output
        source = f"{upstream.step_key}.{upstream.name}" if upstream is not None else "an srdp op output"
        raise RuntimeError(
            f"srdp stores no op outputs: {source} cannot be loaded as input '{context.name}' of "
            f"'{context.op_def.name}'; read its numbers from the output's metadata in the run instead"
        )
