"""Ingestion helpers that load into DuckLake exactly as ``srdp.toml`` defines it.

* :mod:`srdp.ingest.dlt`: dlt's ``ducklake`` destination built from ``srdp_dlt_destination``, with
  srdp's rules (single writer, raw append-only, raw validated) applied before every load, and
  Dagster assets over dagster-dlt that name the physical tables.

The submodules import dlt and Dagster; this package itself imports nothing heavy.
"""
