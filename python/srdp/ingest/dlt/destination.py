"""Where and how dlt loads a dataset: srdp's answer (``srdp_dlt_destination``), and the entry points.

The top of ``srdp.ingest.dlt``: it builds the value (:class:`~.target.DltTarget`, with
:class:`~.target.DestinationOptions`, what a caller asks for) from srdp's answer and adds the verbs;
the steps below take the value and never import this module.

* :class:`DltDestination`: one row of ``srdp_dlt_destination`` plus the options; its methods
  hand each concern to its module (:mod:`.credentials`, :mod:`.rules`, :mod:`.guard`,
  :mod:`.redact`, :mod:`.load`).
* :func:`destination`, :func:`pipeline`, :func:`run`: the helper's entry points;
  :func:`prepare_load`: the load sequence they and the Dagster assets share.
"""

from __future__ import annotations

import json
import logging
import os
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import dlt
import duckdb
from dlt.common.destination import Destination
from dlt.common.pipeline import LoadInfo
from dlt.destinations.impl.ducklake.configuration import DuckLakeCredentials
from dlt.extract import DltResource
from dlt.pipeline.pipeline import Pipeline

import srdp
from srdp.ingest.dlt import guard, redact, rules
from srdp.ingest.dlt.audited import SrdpDuckLake
from srdp.ingest.dlt.credentials import ducklake_credentials
from srdp.ingest.dlt.errors import SrdpDltError, SrdpDltLoadError
from srdp.ingest.dlt.load import LOGGER, PreparedLoad
from srdp.ingest.dlt.target import OPTION_NAMES, DestinationOptions, DltTarget, Password

__all__ = ["DestinationOptions", "DltDestination", "destination", "pipeline", "prepare_load", "run"]


@dataclass(frozen=True)
class DltDestination(DltTarget):
    """Where and how dlt loads one dataset of one catalog (a :class:`~.target.DltTarget`), with the
    verbs: ask srdp again, build dlt's destination and pipeline, load. Build it with
    :func:`destination`; each verb hands its concern to its module (:mod:`.credentials`,
    :mod:`.rules`, :mod:`.guard`, :mod:`.redact`, :mod:`.load`)."""

    # -- srdp -------------------------------------------------------------------------------

    def refresh(self) -> DltDestination:
        """Asks srdp again: reads srdp.toml now, checks the writer again (done before the first
        load of each pipeline in a process, :func:`prepare_load`). The credentials given to
        :func:`destination` are kept."""
        return _ask(self.catalog, self.options, config=self.config_path)

    def table_name(self, table: str) -> str:
        """The physical table, ``<catalog>.<schema>.<table>``, from ``srdp_table_name``."""
        return self.table_names([table])[table]

    def table_names(self, tables: Iterable[str]) -> dict[str, str]:
        """The physical table of each of ``tables`` (one connection for all). In the landing
        zone, which is no DuckLake schema: ``<catalog>.<landing dataset>.<table>``, the name
        lineage gives the landing table (its files are under :attr:`landing_url`)."""
        if self.is_landing:
            return {t: f"{self.catalog}.{self.dataset_name}.{t}" for t in tables}
        with srdp.connect(config=self.config_path) as con:
            rows = {t: _one(con, "srdp_table_name", self.catalog, self.dataset_name, t) for t in tables}
        return {t: str(row["qualified_name"]) for t, row in rows.items()}

    def prepare(self) -> None:
        """Creates the lake, its folders and data path when missing (``srdp_attach_catalog`` as
        writer), then lets go of it so dlt's own DuckDB can attach it.

        dlt does not create a SQLite catalog's folder. Server catalogs (PostgreSQL) are left alone:
        srdp's writer credential is a DuckDB secret this helper does not hold, and dlt's own
        ``ATTACH`` (with ``METADATA_SCHEMA`` from srdp.toml) creates the lake when it is missing.
        """
        if self.is_landing or not (self.catalog_url or "").startswith(("sqlite:", "duckdb:")):
            return
        with srdp.connect(config=self.config_path) as con:
            row = _one(con, "srdp_attach_catalog", self.catalog, role="writer")
            con.execute(f"DETACH {_identifier(str(row['alias']))}")

    # -- dlt --------------------------------------------------------------------------------

    def credentials(self) -> DuckLakeCredentials:
        """dlt's DuckLake credentials (:func:`.credentials.ducklake_credentials`); without a needed
        password this raises :class:`SrdpDltError` (so :meth:`pipeline` does, before dlt runs)."""
        return ducklake_credentials(self)

    def dlt_destination(self) -> Destination:
        """dlt's ``ducklake`` destination for this catalog, each write labelled with this
        destination's writer as DuckLake commit author (:mod:`.audited`); for the landing zone,
        dlt's ``filesystem`` destination on the landing folder (with ``storage_credentials``)."""
        if self.is_landing:
            return dlt.destinations.filesystem(
                bucket_url=self.storage_url, layout=self.layout, credentials=self.storage_credentials
            )
        return SrdpDuckLake(
            credentials=self.credentials(), writer=self.writer, config=self.config_path, catalog=self.catalog
        )

    def pipeline(self, pipeline_name: str, **kwargs: Any) -> Pipeline:
        """A dlt pipeline that loads into this dataset; ``kwargs`` go to ``dlt.pipeline``
        (``pipelines_dir``, ``progress``, ...), but never ``destination`` or ``dataset_name``."""
        rules.refuse_overrides(kwargs, "pipeline()")
        built = dlt.pipeline(
            pipeline_name=pipeline_name,
            destination=self.dlt_destination(),
            dataset_name=self.dataset_name,
            **kwargs,
        )
        _DESTINATIONS[built] = self
        return built

    def load_arguments(self, resources: Iterable[DltResource] = (), **kwargs: Any) -> dict[str, Any]:
        """The keyword arguments of ``pipeline.run`` under the rules (:func:`.rules.load_arguments`);
        into the landing zone, in its file format (Parquet, which the promotion reads)."""
        arguments = rules.load_arguments(self, resources, kwargs)
        if self.is_landing and self.file_format:
            given = arguments.setdefault("loader_file_format", self.file_format)
            if given != self.file_format:
                raise SrdpDltError(
                    f"srdp.ingest.dlt: the landing zone of catalog {self.catalog!r} keeps "
                    f"{self.file_format} files (the promotion reads them), and run() is given "
                    f"loader_file_format={given!r}; leave loader_file_format out"
                )
        return arguments

    def check_pipeline(self, pipeline: Pipeline) -> None:
        """Refuses a pipeline that does not load into this dataset (:func:`.guard.check_pipeline`)."""
        guard.check_pipeline(self, pipeline)

    def log_warnings(self, log: logging.Logger | Any = LOGGER) -> None:
        """Logs one warning per relaxed rule (``log.warning``); called on every load."""
        super().log_warnings(log)

    def run(self, pipeline: Pipeline, data: Any, **kwargs: Any) -> LoadInfo:
        """Loads ``data`` with ``pipeline`` under srdp's rules (:func:`prepare_load`: srdp.toml is
        read and the writer checked at the pipeline's first load in this process).
        A failure whose text holds a secret given to the helper is :class:`SrdpDltLoadError`, redacted;
        a type change dlt refuses under ``raw_validated`` is :class:`SrdpDltValidationError`."""
        return prepare_load(self, pipeline, rules.resources_of(data), kwargs).run(data)

    def secret_free_failure(self, pipeline: Pipeline, error: BaseException) -> SrdpDltLoadError | None:
        """:func:`.redact.secret_free_failure` for the secrets given to this destination."""
        return redact.secret_free_failure(self, pipeline, error)


# Pipelines built by DltDestination.pipeline, so run(pipeline, data) finds their destination.
_DESTINATIONS: weakref.WeakKeyDictionary[Pipeline, DltDestination] = weakref.WeakKeyDictionary()


def destination(
    catalog: str,
    *,
    config: str | os.PathLike[str] | None = None,
    layer: str | None = None,
    schema_name: str | None = None,
    project: str | None = None,
    writer: str = "dlt",
    catalog_user: str | None = None,
    catalog_password: str | None = None,
    storage_credentials: Any = None,
) -> DltDestination:
    """Asks srdp where ``writer`` loads ``layer`` (or ``schema_name``) of ``catalog``, and whether it
    may: ``srdp_dlt_destination``, which checks the writer as ``srdp_check_writer`` does.

    ``layer`` defaults to ``raw`` unless ``schema_name`` names the schema (its layer is then the
    schema's own). ``config`` is the srdp.toml path; without it srdp finds the file itself
    (``SRDP_CONFIG``, then ``./srdp.toml``). ``project`` selects a tenant project's datasets
    (``<project>_raw``). Unknown names and a writer that does not own the schema are
    ``duckdb.Error``s from srdp.

    PostgreSQL catalogs: dlt connects to PostgreSQL itself, so it needs the writer role's
    ``catalog_password`` (srdp.toml never holds one) and, when the libpq string in srdp.toml names
    no user, ``catalog_user``; both live only in this object (the password shows as ``'***'``) and
    in dlt's in-memory credentials. ``storage_credentials`` are dlt's credentials for an
    object-store data path (``dlt.common.configuration.specs.AwsCredentials(aws_access_key_id=...,
    aws_secret_access_key=..., region_name=..., endpoint_url=...)``); without them dlt resolves
    its own. SQLite and DuckDB-file catalogs ignore ``catalog_user`` and ``catalog_password``.
    """
    options = DestinationOptions(
        config=config, layer=layer, schema_name=schema_name, project=project, writer=writer,
        catalog_user=catalog_user,
        catalog_password=None if catalog_password is None else Password(catalog_password),
        storage_credentials=storage_credentials,
    )
    return _ask(catalog, options, config=config)


def pipeline(pipeline_name: str, catalog: str, **kwargs: Any) -> Pipeline:
    """``destination(catalog, ...).pipeline(pipeline_name, ...)`` in one call: the keyword
    arguments named like :class:`DestinationOptions`'s fields go to :func:`destination`, the
    others to ``dlt.pipeline``."""
    options = {k: kwargs.pop(k) for k in list(kwargs) if k in OPTION_NAMES}
    return destination(catalog, **options).pipeline(pipeline_name, **kwargs)


def run(pipeline: Pipeline, data: Any, *, destination: DltDestination | None = None, **kwargs: Any) -> LoadInfo:
    """:meth:`DltDestination.run` for a pipeline built by :func:`pipeline` (or pass ``destination``)."""
    target = destination or _DESTINATIONS.get(pipeline)
    if target is None:
        raise SrdpDltError(
            f"srdp.ingest.dlt: pipeline {pipeline.pipeline_name!r} was not built by srdp.ingest.dlt; "
            "build it with srdp.ingest.dlt.pipeline(...) or pass destination="
        )
    return target.run(pipeline, data, **kwargs)


@dataclass(frozen=True)
class _Asked:
    """What the first load of a pipeline in this process learnt: srdp's answer for ``target``,
    and the dlt destination and dataset the pipeline was checked with."""

    pid: int
    target: DltDestination
    current: DltDestination
    checked: tuple[Any, str | None]


# Per pipeline, srdp's answer at its first load in this process (see prepare_load).
_ASKED: weakref.WeakKeyDictionary[Pipeline, _Asked] = weakref.WeakKeyDictionary()


def prepare_load(
    target: DltDestination,
    pipeline: Pipeline,
    resources: Iterable[DltResource],
    arguments: Mapping[str, Any],
    log: logging.Logger | Any = LOGGER,
) -> PreparedLoad:
    """Everything before dlt runs, in order: read srdp.toml and check the writer again (srdp
    errors surface as ``duckdb.Error``), check the pipeline's destination, apply the rules to
    ``resources`` and ``arguments`` (refusals change nothing in the lake), log one warning per
    relaxed rule on ``log``, create the lake if missing. The one load sequence of
    :meth:`DltDestination.run` and the Dagster assets of :mod:`srdp.dagster.dlt_assets`.

    srdp.toml is read, the writer and the pipeline's destination checked and the lake created
    once per pipeline, destination and process: at the pipeline's first load here, whose answer
    is kept with the pipeline. The loads after it apply the rules and log the warnings of that
    answer without reading the file again (that was about 0.3 s a load, a tenth of a small
    incremental load). A changed srdp.toml is seen by the next process (every Dagster run is
    one), and in this one by a pipeline built anew or a destination asked anew
    (:func:`destination`, :meth:`DltDestination.refresh`).
    """
    asked = _ASKED.get(pipeline)
    checked = (pipeline.destination, pipeline.dataset_name)
    if asked is not None and asked.pid == os.getpid() and asked.target is target:
        current = asked.current
        if asked.checked[0] is not checked[0] or asked.checked[1] != checked[1]:
            current.check_pipeline(pipeline)  # the pipeline was pointed elsewhere since
    else:
        asked = None
        current = target.refresh()
        current.check_pipeline(pipeline)
    allowed = current.load_arguments(resources, **arguments)
    current.log_warnings(log)
    if asked is None:
        current.prepare()
        _ASKED[pipeline] = _Asked(os.getpid(), target, current, checked)
    return PreparedLoad(current, pipeline, allowed)


def _ask(catalog: str, options: DestinationOptions, config: str | os.PathLike[str] | None) -> DltDestination:
    """One call of ``srdp_dlt_destination`` (which checks the writer itself, srdp_check_writer's
    rules, and lists that check's warning among the load's warnings) as a :class:`DltDestination`."""
    with srdp.connect(config=config) as con:
        row = _one(con, "srdp_dlt_destination", catalog, **options.srdp_arguments())
        config_path = str(srdp.call(con, "srdp_version")[0]["config_path"])
        relax_with = {r["rule"]: r["relax_with"] for r in srdp.call(con, "srdp_rules", catalog)}
    landing = row.get("destination_type") == "filesystem"
    return DltDestination(
        catalog=row["catalog"],
        attach_name=row["attach_name"],
        catalog_url=row["catalog_url"],
        metadata_schema=row["metadata_schema"],
        storage_url=row["storage_url"],
        dataset_name=row["dataset_name"],
        layer=row["layer"],
        writer=row["writer"],
        owner=row["owner"],
        write_disposition=row["write_disposition"],
        schema_contract=json.loads(row["schema_contract"]) if row["schema_contract"] else None,
        data_inlining_row_limit=int(row["data_inlining_row_limit"]),
        warnings=tuple(row["warnings"] or []),
        config_path=config_path,
        options=options,
        relax_with=relax_with,
        destination_type=str(row.get("destination_type") or "ducklake"),
        file_format=row.get("file_format"),
        layout=row.get("layout"),
        promote_into=row.get("promote_into") if landing else None,
    )


def _one(con: duckdb.DuckDBPyConnection, function: str, *args: Any, **named: Any) -> dict[str, Any]:
    """The single row of an srdp table function as a dict; ``None`` named arguments are left out."""
    rows = srdp.call(con, function, *args, **named)
    if not rows:
        raise SrdpDltError(f"srdp.ingest.dlt: {function} returned no row")
    return rows[0]


def _identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
