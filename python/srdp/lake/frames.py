"""The frame types srdp writes into and loads from DuckLake, one small handler each.

Writes hand DuckDB something it scans through Arrow without a copy where it can: a pyarrow
``Table`` or ``RecordBatchReader``, a pandas or polars ``DataFrame`` (DuckDB scans them in
place), a polars ``LazyFrame`` (collected with polars' streaming engine), a DuckDB relation
(streamed as Arrow batches from whichever connection made it). Loads return the annotated
type; a ``RecordBatchReader`` or ``LazyFrame`` input streams, a relation stays lazy.

A source that can only be read once (a reader, a relation) is not *replayable*: a write that
must be retried after it was consumed fails instead of writing a partial stream.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb
import pyarrow as pa

__all__ = ["Source", "load_as", "source_of"]

#: Rows per Arrow batch when an input streams.
BATCH_ROWS = 100_000


@dataclass
class Source:
    """What DuckDB scans for a write, and whether it can be scanned again."""

    data: Any
    replayable: bool
    kind: str


def source_of(obj: Any) -> Source:
    """The scan source for an asset's output value, or ``TypeError`` naming what is supported."""
    if isinstance(obj, pa.Table):
        return Source(obj, True, "pyarrow.Table")
    if isinstance(obj, pa.RecordBatchReader):
        return Source(obj, False, "pyarrow.RecordBatchReader")
    if isinstance(obj, duckdb.DuckDBPyRelation):
        return Source(obj.to_arrow_reader(BATCH_ROWS), False, "duckdb relation")
    module = type(obj).__module__.split(".")[0]
    if module == "pandas":
        import pandas as pd

        if isinstance(obj, pd.DataFrame):
            return Source(obj, True, "pandas.DataFrame")
    if module == "polars":
        import polars as pl

        if isinstance(obj, pl.LazyFrame):
            return Source(obj.collect(engine="streaming"), True, "polars.LazyFrame")
        if isinstance(obj, pl.DataFrame):
            return Source(obj, True, "polars.DataFrame")
    raise TypeError(
        f"SrdpIOManager cannot store a {type(obj).__module__}.{type(obj).__qualname__}: return a "
        "pyarrow Table or RecordBatchReader, a pandas or polars DataFrame, a polars LazyFrame or "
        "a DuckDB relation"
    )


def load_as(annotation: Any, relation: duckdb.DuckDBPyRelation) -> Any:
    """``relation`` as the input's annotated type (a pyarrow ``Table`` when not annotated)."""
    if annotation is pa.RecordBatchReader:
        return relation.to_arrow_reader(BATCH_ROWS)
    if annotation is duckdb.DuckDBPyRelation:
        return relation
    name = f"{getattr(annotation, '__module__', '')}.{getattr(annotation, '__qualname__', '')}"
    if name.startswith("pandas.") and name.endswith("DataFrame"):
        return relation.df()
    if name.startswith("polars.") and name.endswith("LazyFrame"):
        return relation.pl(batch_size=BATCH_ROWS, lazy=True)
    if name.startswith("polars.") and name.endswith("DataFrame"):
        return relation.pl()
    if annotation in (None, pa.Table) or name in ("typing.Any", "builtins.object"):
        return relation.to_arrow_table()
    raise TypeError(
        f"SrdpIOManager cannot load an input annotated {name}: annotate it as pyarrow.Table, "
        "pyarrow.RecordBatchReader, pandas.DataFrame, polars.DataFrame, polars.LazyFrame or "
        "duckdb.DuckDBPyRelation"
    )
