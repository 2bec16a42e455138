"""srdp's write core: a frame into a DuckLake table in ONE transaction, without Dagster or dlt.

* :mod:`.session`: :class:`LakeSession` (one connection with srdp per process and catalog; the
  one-transaction write of a :class:`WritePlan`, retried as srdp decides; reads as relations).
* :mod:`.names`: :class:`TableRef` and SQL quoting; :mod:`.slices`: a partition's rows as a
  :class:`Slice` (SQL condition with bound parameters) and the ``partition_expr`` check.
* :mod:`.frames`: the frame :class:`Source` handlers (pyarrow, pandas, polars, DuckDB relations).
* :mod:`.errors`: :class:`LakeError`, every refusal.

Imports only downward: :mod:`srdp` and DuckDB/pyarrow. The IO manager (:mod:`srdp.dagster`) and
the landing promotion (:mod:`srdp.ingest.landing`) are its users.
"""

from __future__ import annotations

from srdp.lake.errors import LakeError
from srdp.lake.frames import Source, load_as, source_of
from srdp.lake.names import TableRef, quote
from srdp.lake.session import LakeSession, WritePlan, WriteResult, lossless, secret_problem
from srdp.lake.slices import Slice, check_partition_expr, slice_condition

__all__ = [
    "LakeError",
    "LakeSession",
    "Slice",
    "Source",
    "TableRef",
    "WritePlan",
    "WriteResult",
    "check_partition_expr",
    "load_as",
    "lossless",
    "quote",
    "secret_problem",
    "slice_condition",
    "source_of",
]
