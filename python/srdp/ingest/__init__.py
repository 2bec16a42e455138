"""Ingestion helpers that load into DuckLake exactly as ``srdp.toml`` defines it.

* :mod:`srdp.ingest.dlt`: dlt's ``ducklake`` destination built from ``srdp_dlt_destination``, with
  srdp's rules (single writer, raw append-only, raw validated) applied before every load. Its
  Dagster assets over dagster-dlt, which name the physical tables, live in
  :mod:`srdp.dagster.dlt_assets`.

The submodules import dlt (never Dagster); this package itself imports nothing heavy.
"""
