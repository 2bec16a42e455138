"""dlt loads into DuckLake as ``srdp.toml`` defines them, with srdp's rules applied before loading.

The definition decides everything a load may not choose for itself: which lake (dlt's
``ducklake`` destination, attached under the catalog's name so tables are ``lake.raw.events``),
which dataset (``raw``, or ``<project>_raw`` on a tenant catalog), who may write it
(``single_writer``), how raw is written (``raw_append_only``: ``append`` only) and how strictly
(``raw_validated``: data types frozen, new columns allowed). The SQL functions of the srdp
extension make those decisions (``srdp_dlt_destination``, which applies
``srdp_check_writer``'s rules, and ``srdp_table_name``); this package only hands them to dlt:

>>> import srdp.ingest.dlt as srdp_dlt
>>> lake = srdp_dlt.destination("lake", config="srdp.toml")     # raw, written by dlt
>>> pipeline = lake.pipeline("events")                          # dataset_name from srdp.toml
>>> lake.run(pipeline, events())                                # checks, warns, then loads

A rule that ``srdp.toml`` relaxes (``[rules] raw_append_only = false``) lets the load through
and logs one warning per relaxed rule on every load (logger ``srdp.ingest.dlt``; in Dagster,
``context.log``). Dagster assets over dagster-dlt are ``srdp.dagster``'s: ``from srdp.dagster
import srdp_dlt_assets, SrdpDltTranslator`` (this package never imports Dagster). Their old
spelling here, ``srdp.ingest.dlt.srdp_dlt_assets``, still works in this release with a
DeprecationWarning, and goes in the next.

A PostgreSQL catalog needs the writer role's password, which srdp.toml never holds (srdp itself
reads it from a DuckDB secret, and DuckDB secrets do not reveal it): pass it to the helper, which
puts it only into dlt's in-memory credentials, next to the metadata schema from srdp.toml (dlt
would otherwise use its ``ducklake_name`` as the schema and not find the lake):

>>> lake = srdp_dlt.destination("lake", catalog_user="loader",       # when the libpq string names none
...                             catalog_password=os.environ["LAKE_WRITER_PASSWORD"],
...                             storage_credentials=AwsCredentials(...))   # S3 data path, optional

A load that dlt stops under ``raw_validated`` (a column of a raw table would change type) raises
:class:`SrdpDltValidationError`, naming the column, both types, the line that relaxes the rule
and what becomes of the load package left pending.

A load that fails with the password (or the storage secret) in dlt's error text raises
:class:`SrdpDltLoadError` with the text redacted, and the helper redacts dlt's trace of that run.

dlt's ``filesystem`` destination must never write into a DuckLake data path (files there bypass
the catalog): :func:`check_not_filesystem` refuses that, and :meth:`DltDestination.run` calls it.

Modules: ``destination`` (srdp's answer and the entry points), ``credentials`` (dlt's
credentials), ``rules`` (refusals), ``guard`` (misdirected destinations), ``redact`` (secrets
in failures), ``load`` (the load sequence), ``errors``.

Importing this package sets ``RUNTIME__DLTHUB_TELEMETRY=false`` unless the environment already
sets it: srdp runs offline.
"""

from __future__ import annotations

import os

os.environ.setdefault("RUNTIME__DLTHUB_TELEMETRY", "false")

import warnings  # noqa: E402  (telemetry must be off before dlt is imported)
from typing import Any  # noqa: E402

from srdp.ingest.dlt.errors import SrdpDltError, SrdpDltLoadError, SrdpDltValidationError  # noqa: E402
from srdp.ingest.dlt.guard import check_not_filesystem  # noqa: E402
from srdp.ingest.dlt.destination import DestinationOptions, DltDestination, destination, pipeline, run  # noqa: E402

__all__ = [
    "DestinationOptions",
    "DltDestination",
    "SrdpDltError",
    "SrdpDltLoadError",
    "SrdpDltValidationError",
    "check_not_filesystem",
    "destination",
    "pipeline",
    "run",
]

#: Names that moved to srdp.dagster (their one home); the old spelling here is deprecated.
MOVED_TO_DAGSTER = frozenset({"SrdpDltTranslator", "srdp_dlt_assets"})


def __getattr__(name: str) -> Any:
    if name in MOVED_TO_DAGSTER:
        warnings.warn(
            f"srdp.ingest.dlt.{name} is deprecated and will be removed in the next release: import it "
            f"from srdp.dagster (from srdp.dagster import {name}); srdp.ingest.dlt is Dagster-free",
            DeprecationWarning,
            stacklevel=2,
        )
        # The deprecated spelling's import upward into Dagster, allowed by test_python_layout's
        # DEPRECATED_UPWARD_IMPORTS until it goes in the next release.
        import srdp.dagster

        return getattr(srdp.dagster, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
