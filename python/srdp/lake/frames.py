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

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa

from srdp.lake.names import TableRef
from srdp.lake.slices import Slice

if TYPE_CHECKING:
    from srdp.lake.session import LakeSession

__all__ = ["Source", "column_names", "load_as", "load_empty", "source_of"]

#: Rows per Arrow batch when an input streams.
BATCH_ROWS = 100_000


@dataclass
class Source:
    """What DuckDB scans for a write, and whether it can be scanned again."""

    data: Any
    replayable: bool
    kind: str


def source_of(obj: Any) -> Source:
    """The scan source for an asset's output value, or ``TypeError`` naming what is supported.

    Types are picked by ``isinstance`` (a subclass of a DataFrame is a DataFrame); pandas and
    polars are looked up only when already imported (an object of theirs means they are)."""
    if isinstance(obj, pa.Table):
        return Source(obj, True, "pyarrow.Table")
    if isinstance(obj, pa.RecordBatchReader):
        return Source(obj, False, "pyarrow.RecordBatchReader")
    if isinstance(obj, duckdb.DuckDBPyRelation):
        return Source(obj.to_arrow_reader(BATCH_ROWS), False, "duckdb relation")
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(obj, pd.DataFrame):
        # DuckDB scans a pandas.DataFrame by its exact type: a subclass is viewed as one (no copy).
        frame = obj if type(obj) is pd.DataFrame else pd.DataFrame(obj, copy=False)
        return Source(frame, True, "pandas.DataFrame")
    pl = sys.modules.get("polars")
    if pl is not None:
        if isinstance(obj, pl.LazyFrame):
            return Source(obj.collect(engine="streaming"), True, "polars.LazyFrame")
        if isinstance(obj, pl.DataFrame):
            return Source(obj if type(obj) is pl.DataFrame else obj.to_arrow(), True, "polars.DataFrame")
    raise TypeError(
        f"SrdpIOManager cannot store a {type(obj).__module__}.{type(obj).__qualname__}: return a "
        "pyarrow Table or RecordBatchReader, a pandas or polars DataFrame, a polars LazyFrame or "
        "a DuckDB relation"
    )


def column_names(data: Any) -> list[str] | None:
    """The column names of a source's data as the frame has them (DuckDB would rename
    duplicates and empty names), or None when the type does not say without reading it."""
    names = getattr(data, "column_names", None)  # pyarrow.Table
    if names is None and isinstance(data, pa.RecordBatchReader):
        names = data.schema.names
    if names is None:
        names = getattr(data, "columns", None)  # pandas, polars
    if names is None:
        return None
    return [str(n) for n in names]


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


def load_empty(annotation: Any, session: LakeSession, table: TableRef, columns: list[str] | None) -> Any:
    """An empty input of the annotated type: the table's columns (``columns`` of them) with no
    rows, or no columns when the table does not exist yet (nor the lake: a brand-new project's
    first partition of a self-dependent asset, which the writer's attach of its output creates)."""
    if session.attach_existing("reader") and session.columns(table) is not None:
        return load_as(annotation, session.relation(table, columns, Slice("false"), None))
    empty = pa.table({})
    name = f"{getattr(annotation, '__module__', '')}.{getattr(annotation, '__qualname__', '')}"
    if name.startswith("pandas."):
        import pandas as pd

        return pd.DataFrame()
    if name.startswith("polars.") and name.endswith("LazyFrame"):
        import polars as pl

        return pl.LazyFrame()
    if name.startswith("polars."):
        import polars as pl

        return pl.DataFrame()
    if annotation is pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(empty.schema, [])
    return empty
