"""Ingestion helpers that load into DuckLake exactly as ``srdp.toml`` defines it.

* :mod:`srdp.ingest.dlt`: dlt's ``ducklake`` destination built from ``srdp_dlt_destination``, with
  srdp's rules (single writer, raw append-only, raw validated) applied before every load. Its
  Dagster assets over dagster-dlt, which name the physical tables, live in
  :mod:`srdp.dagster.dlt_assets`.

* :mod:`srdp.ingest.landing`: the landing zone (dlt's quarantine way in): promotion of finished
  loads into raw through the IO manager's write path, and retention. ``promote_landing`` and
  ``landing_retention`` are importable from here too.

:mod:`srdp.ingest.dlt` imports dlt (never Dagster); this package itself imports nothing heavy:
its landing names are imported on first use. The Dagster names (``srdp_landing_assets``,
``landing_retention_schedule``, ``srdp_dlt_assets``, ``SrdpDltTranslator``) are
:mod:`srdp.dagster`'s; their old spellings here still work in this release with a
DeprecationWarning, and go in the next.
"""

import importlib
import warnings
from typing import Any

_LANDING = {
    "promote_landing": "srdp.ingest.landing",
    "landing_retention": "srdp.ingest.landing",
}

#: Names that moved to srdp.dagster (their one home); the old spelling here is deprecated.
MOVED_TO_DAGSTER = frozenset({"srdp_landing_assets", "landing_retention_schedule"})


def __getattr__(name: str) -> Any:
    if name in _LANDING:
        return getattr(importlib.import_module(_LANDING[name]), name)
    if name in MOVED_TO_DAGSTER:
        warnings.warn(
            f"srdp.ingest.{name} is deprecated and will be removed in the next release: import it "
            f"from srdp.dagster (from srdp.dagster import {name}); srdp.ingest is Dagster-free",
            DeprecationWarning,
            stacklevel=2,
        )
        # The deprecated spelling's import upward into Dagster, allowed by test_python_layout's
        # DEPRECATED_UPWARD_IMPORTS until it goes in the next release.
        import srdp.dagster

        return getattr(srdp.dagster, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
