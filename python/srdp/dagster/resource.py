"""The Dagster resource every srdp op uses: DuckDB with srdp loaded from one definition file."""

from __future__ import annotations

from collections.abc import Sequence

import dagster as dg
import duckdb

import srdp

__all__ = ["RESOURCE_KEY", "SrdpResource"]

#: The resource key srdp's ops require.
RESOURCE_KEY = "srdp"


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
