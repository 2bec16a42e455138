"""Ingestion helpers that load into DuckLake exactly as ``srdp.toml`` defines it.

* :mod:`srdp.ingest.dlt`: dlt's ``ducklake`` destination built from ``srdp_dlt_destination``, with
  srdp's rules (single writer, raw append-only, raw validated) applied before every load. Its
  Dagster assets over dagster-dlt, which name the physical tables, live in
  :mod:`srdp.dagster.dlt_assets`.

* :mod:`srdp.ingest.landing`: the landing zone (dlt's quarantine way in): promotion of finished
  loads into raw through the IO manager's write path, and retention. ``promote_landing``,
  ``landing_retention`` and the Dagster ``srdp_landing_assets`` are importable from here too.

:mod:`srdp.ingest.dlt` imports dlt (never Dagster); this package itself imports nothing heavy:
its landing names are imported on first use.
"""

from typing import Any

_LANDING = {
    "promote_landing": "srdp.ingest.landing",
    "landing_retention": "srdp.ingest.landing",
    "srdp_landing_assets": "srdp.dagster.landing_assets",
    "landing_retention_schedule": "srdp.dagster.landing_assets",
}


def __getattr__(name: str) -> Any:
    if name in _LANDING:
        import importlib

        return getattr(importlib.import_module(_LANDING[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
