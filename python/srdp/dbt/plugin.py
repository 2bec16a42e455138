"""A dbt-duckdb plugin that loads the srdp extension on every connection, writing nothing.

In ``profiles.yml`` (``python -m srdp dbt-profile`` writes it)::

    plugins:
      - module: srdp.dbt.plugin
        alias: srdp
        config:
          extension: /abs/path/to/srdp.duckdb_extension   # default: srdp.extension_path()

dbt-duckdb 1.11.1 calls ``configure_connection`` once per database, right after
``duckdb.connect(config=config_options)`` and before the ``settings:`` are ``SET`` on each
cursor, so ``settings: {srdp_config: ...}`` works. The extension is loaded from its path with
``LOAD`` only: nothing is installed, copied or downloaded (the ``extensions:`` list of
dbt-duckdb would ``INSTALL`` the file into the extension directory first).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dbt.adapters.duckdb.plugins import BasePlugin
from duckdb import DuckDBPyConnection

import srdp
from srdp.dbt.profile import EXTENSION_LOOKUP, extension_not_found

__all__ = ["Plugin"]


class Plugin(BasePlugin):
    """Loads srdp (``config: {extension: <path>}``) into dbt-duckdb's database."""

    def initialize(self, plugin_config: dict[str, Any]) -> None:
        configured = plugin_config.get("extension")
        self.configured = bool(configured)
        self.extension = Path(str(configured)) if configured else srdp.extension_path()

    def configure_connection(self, conn: DuckDBPyConnection) -> None:
        if not self.extension.is_file():
            raise FileNotFoundError(f"srdp.dbt.plugin: {self._not_found()}")
        path = str(self.extension).replace("'", "''")
        conn.execute(f"LOAD '{path}'")

    def _not_found(self) -> str:
        if not self.configured:
            return extension_not_found(self.extension)
        return (
            f"srdp extension not found at {self.extension}, the profile's plugin config `extension:`; "
            f"fix it (`python -m srdp dbt-profile` renders the current path) or remove it to use "
            f"srdp's own lookup ({EXTENSION_LOOKUP})"
        )
