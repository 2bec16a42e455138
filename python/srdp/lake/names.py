"""A DuckLake table's name: the catalog alias, its schema, its table, and SQL quoting (pure)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TableRef", "quote"]


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
