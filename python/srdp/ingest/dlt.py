"""dlt loads into DuckLake as ``srdp.toml`` defines them, with srdp's rules applied before loading.

The definition decides everything a load may not choose for itself: which lake (dlt's
``ducklake`` destination, attached under the catalog's name so tables are ``lake.raw.events``),
which dataset (``raw``, or ``<project>_raw`` on a tenant catalog), who may write it
(``single_writer``), how raw is written (``raw_append_only``: ``append`` only) and how strictly
(``raw_validated``: data types frozen, new columns allowed). The SQL functions of the srdp
extension make those decisions (``srdp_dlt_destination``, which applies
``srdp_check_writer``'s rules, and ``srdp_table_name``); this module only hands them to dlt and dagster-dlt:

>>> import srdp.ingest.dlt as srdp_dlt
>>> lake = srdp_dlt.destination("lake", config="srdp.toml")     # raw, written by dlt
>>> pipeline = lake.pipeline("events")                          # dataset_name from srdp.toml
>>> lake.run(pipeline, events())                                # checks, warns, then loads

A rule that ``srdp.toml`` relaxes (``[rules] raw_append_only = false``) lets the load through
and logs one warning per relaxed rule on every load (logger ``srdp.ingest.dlt``; in Dagster,
``context.log``). :func:`srdp_dlt_assets` builds Dagster assets over dagster-dlt whose
``dagster/table_name`` is the physical table and which carry no synthetic upstream dependency.

A PostgreSQL catalog needs the writer role's password, which srdp.toml never holds (srdp itself
reads it from a DuckDB secret, and DuckDB secrets do not reveal it): pass it to the helper, which
puts it only into dlt's in-memory credentials, next to the metadata schema from srdp.toml (dlt
would otherwise use its ``ducklake_name`` as the schema and not find the lake):

>>> lake = srdp_dlt.destination("lake", catalog_user="loader",       # when the libpq string names none
...                             catalog_password=os.environ["LAKE_WRITER_PASSWORD"],
...                             storage_credentials=AwsCredentials(...))   # S3 data path, optional

A load that fails with the password (or the storage secret) in dlt's error text raises
:class:`SrdpDltLoadError` with the text redacted, and the helper redacts dlt's trace of that run.

dlt's ``filesystem`` destination must never write into a DuckLake data path (files there bypass
the catalog): :func:`check_not_filesystem` refuses that, and :meth:`DltDestination.run` calls it.

Importing this module sets ``RUNTIME__DLTHUB_TELEMETRY=false`` unless the environment already
sets it: srdp runs offline.
"""

import dataclasses
import json
import logging
import os
import pickle
import traceback
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus, urlparse

os.environ.setdefault("RUNTIME__DLTHUB_TELEMETRY", "false")

import dlt  # noqa: E402  (telemetry must be off before dlt reads its runtime configuration)
import duckdb  # noqa: E402
from dagster import AssetExecutionContext, AssetKey, AssetsDefinition, AssetSpec, MaterializeResult  # noqa: E402
from dagster_dlt import DagsterDltResource, DagsterDltTranslator, dlt_assets  # noqa: E402
from dagster_dlt.translator import DltResourceTranslatorData  # noqa: E402
from dlt.common.configuration.specs.base_configuration import is_secret_hint  # noqa: E402
from dlt.common.configuration.specs.connection_string_credentials import ConnectionStringCredentials  # noqa: E402
from dlt.common.destination import Destination  # noqa: E402
from dlt.common.pipeline import LoadInfo  # noqa: E402
from dlt.common.storages.configuration import FilesystemConfiguration  # noqa: E402
from dlt.destinations.impl.ducklake.configuration import DuckLakeCredentials  # noqa: E402
from dlt.pipeline.trace import TRACE_FILE_NAME, save_trace  # noqa: E402
from dlt.extract import DltResource, DltSource  # noqa: E402
from dlt.pipeline.pipeline import Pipeline  # noqa: E402

import srdp  # noqa: E402

__all__ = [
    "DltDestination",
    "SrdpDltError",
    "SrdpDltLoadError",
    "SrdpDltTranslator",
    "check_not_filesystem",
    "destination",
    "pipeline",
    "run",
    "srdp_dlt_assets",
]

LOGGER = logging.getLogger(__name__)

_DDL_KWARGS = ("destination", "dataset_name", "staging")


class SrdpDltError(ValueError):
    """A load this helper refuses before it starts: a rule of srdp.toml or a misdirected destination.

    Refusals that srdp's SQL functions make (unknown catalog, layer, writer or project; a writer
    that does not own the schema) surface unchanged as ``duckdb.Error`` with srdp's message.
    """


class SrdpDltLoadError(SrdpDltError):
    """dlt's load failed and dlt's error text held a secret the helper gave it (the catalog
    password, the storage secret): the same text with the secret replaced by ``***``.

    It is raised without dlt's exception attached (no ``__cause__`` or ``__context__``), since
    those carry the secret; failures that hold no secret surface as dlt raised them.
    """


class _Password:
    """A password that never shows itself: ``repr`` and ``str`` are ``'***'``."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        if not isinstance(value, str) or not value:
            raise SrdpDltError("srdp.ingest.dlt: catalog_password must be a non-empty string")
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "'***'"

    __str__ = __repr__


@dataclass(frozen=True)
class DltDestination:
    """Where and how dlt loads one dataset of one catalog: one row of ``srdp_dlt_destination``.

    Build it with :func:`destination`. ``write_disposition`` and ``schema_contract`` are what the
    rules impose (``None`` = not constrained, because the rule is relaxed or the layer is not raw);
    ``warnings`` has one text per relaxed rule, logged on every load.
    """

    catalog: str
    attach_name: str
    catalog_url: str
    metadata_schema: str | None
    storage_url: str
    dataset_name: str
    layer: str
    writer: str
    owner: str | None
    write_disposition: str | None
    schema_contract: Mapping[str, str] | None
    data_inlining_row_limit: int
    warnings: tuple[str, ...]
    config_path: str
    """The srdp.toml every decision came from (absolute)."""
    request: Mapping[str, str | None] = field(repr=False, compare=False)
    """The arguments of :func:`destination`, so :meth:`refresh` can ask again."""
    catalog_user: str | None = None
    """PostgreSQL catalogs: the user dlt connects as (default: the ``user`` of the libpq string in
    srdp.toml, which usually names none because the DuckDB secrets hold it)."""
    catalog_password: _Password | None = field(default=None, repr=False, compare=False)
    """PostgreSQL catalogs: the writer role's password (shown as ``'***'``), only ever handed to
    dlt's in-memory credentials."""
    storage_credentials: Any = field(default=None, repr=False, compare=False)
    """Object-store data paths: dlt's credentials for the storage (``AwsCredentials(...)``); ``None``
    lets dlt resolve them from its own configuration."""

    # -- srdp -------------------------------------------------------------------------------

    def refresh(self) -> "DltDestination":
        """Asks srdp again: reads srdp.toml now, checks the writer again (done before every load).
        The credentials given to :func:`destination` are kept."""
        return dataclasses.replace(
            destination(self.catalog, config=self.config_path, **self.request),
            catalog_user=self.catalog_user,
            catalog_password=self.catalog_password,
            storage_credentials=self.storage_credentials,
        )

    @property
    def is_postgres(self) -> bool:
        """The catalog keeps its metadata in PostgreSQL (dlt then needs a user and a password)."""
        return self.catalog_url.startswith(("postgres:", "postgresql:"))

    def table_name(self, table: str) -> str:
        """The physical table, ``<catalog>.<schema>.<table>``, from ``srdp_table_name``."""
        with srdp.connect(config=self.config_path) as con:
            row = _one(con, "srdp_table_name", [self.catalog, self.dataset_name, table])
        return str(row["qualified_name"])

    def prepare(self) -> None:
        """Creates the lake, its folders and data path when missing (``srdp_attach_catalog`` as
        writer), then lets go of it so dlt's own DuckDB can attach it.

        dlt does not create a SQLite catalog's folder. Server catalogs (PostgreSQL) are left alone:
        srdp's writer credential is a DuckDB secret this helper does not hold, and dlt's own
        ``ATTACH`` (with ``METADATA_SCHEMA`` from srdp.toml) creates the lake when it is missing.
        """
        if not self.catalog_url.startswith(("sqlite:", "duckdb:")):
            return
        with srdp.connect(config=self.config_path) as con:
            row = _one(con, "srdp_attach_catalog", [self.catalog], role="writer")
            con.execute(f"DETACH {_identifier(str(row['alias']))}")

    # -- dlt --------------------------------------------------------------------------------

    def credentials(self) -> DuckLakeCredentials:
        """dlt's DuckLake credentials: the lake srdp attaches, offline, with srdp's inlining limit.

        For a PostgreSQL catalog they carry the metadata schema from srdp.toml and the user and
        password given to :func:`destination`; without a password this raises
        :class:`SrdpDltError` (so :meth:`pipeline` does, before dlt runs).
        """
        creds = DuckLakeCredentials(
            ducklake_name=self.attach_name,
            metadata_schema=self.metadata_schema,
            catalog=self._catalog_credentials(),
            storage=self._storage(),
        )
        settings = srdp.duckdb_config()
        # Applied with SET GLOBAL on each connection dlt opens, before its ATTACH autoloads
        # ducklake: extensions come from srdp's directory and nothing is downloaded.
        creds.global_config = {
            "extension_directory": settings["extension_directory"],
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": True,
            "ducklake_default_data_inlining_row_limit": self.data_inlining_row_limit,
        }
        return creds

    def dlt_destination(self) -> Destination:
        """dlt's ``ducklake`` destination for this catalog."""
        return dlt.destinations.ducklake(credentials=self.credentials())

    def pipeline(self, pipeline_name: str, **kwargs: Any) -> Pipeline:
        """A dlt pipeline that loads into this dataset; ``kwargs`` go to ``dlt.pipeline``
        (``pipelines_dir``, ``progress``, ...), but never ``destination`` or ``dataset_name``."""
        _refuse_overrides(kwargs, "pipeline()")
        built = dlt.pipeline(
            pipeline_name=pipeline_name,
            destination=self.dlt_destination(),
            dataset_name=self.dataset_name,
            **kwargs,
        )
        _DESTINATIONS[built] = self
        return built

    def load_arguments(self, resources: Iterable[DltResource] = (), **kwargs: Any) -> dict[str, Any]:
        """The keyword arguments of ``pipeline.run`` under the rules, or :class:`SrdpDltError`.

        ``resources`` are the dlt resources about to load: their own ``write_disposition`` must be
        ``append`` while ``raw_append_only`` is on, unless ``write_disposition`` is given here.
        """
        _refuse_overrides(kwargs, "run()")
        arguments = dict(kwargs)
        if self.write_disposition is not None:
            if "write_disposition" in arguments:
                requested = {"the write_disposition argument": arguments["write_disposition"]}
            else:
                requested = {f"resource '{r.name}'": r.write_disposition for r in resources}
            for who, value in requested.items():
                if _disposition(value) != self.write_disposition:
                    raise SrdpDltError(self._rule_refusal(
                        "raw_append_only",
                        f"{who} has write_disposition {_disposition(value)!r}, and "
                        f"{self.dataset_name} takes {self.write_disposition!r} only",
                        f"load with write_disposition={self.write_disposition!r}",
                    ))
            arguments["write_disposition"] = self.write_disposition
        if self.schema_contract is not None:
            given = _contract(arguments.get("schema_contract"))
            for key, mode in self.schema_contract.items():
                if given.get(key, mode) != mode:
                    raise SrdpDltError(self._rule_refusal(
                        "raw_validated",
                        f"the schema_contract argument sets {key} to {given[key]!r}, and "
                        f"{self.dataset_name} needs {key} {mode!r}",
                        f"leave {key} out of schema_contract",
                    ))
            arguments["schema_contract"] = {**given, **self.schema_contract}
        return arguments

    def check_pipeline(self, pipeline: Pipeline) -> None:
        """Refuses a pipeline that does not load into this catalog's dataset (say, a
        ``filesystem`` pipeline pointed at the data path)."""
        target = pipeline.destination
        if target is not None and target.destination_type == "dlt.destinations.filesystem":
            check_not_filesystem(pipeline, config=self.config_path)
        alias = getattr((target.config_params if target else {}).get("credentials"), "ducklake_name", None)
        if (
            target is None
            or target.destination_type != "dlt.destinations.ducklake"
            or alias != self.attach_name
            or pipeline.dataset_name != self.dataset_name
        ):
            where = f"{target.destination_type if target else 'no destination'}, dataset {pipeline.dataset_name!r}"
            raise SrdpDltError(
                f"srdp.ingest.dlt: pipeline {pipeline.pipeline_name!r} ({where}) does not load into "
                f"{self.catalog}.{self.dataset_name}; build it with "
                f"srdp.ingest.dlt.destination({self.catalog!r}, ...).pipeline(...)"
            )

    def log_warnings(self, log: logging.Logger | Any = LOGGER) -> None:
        """Logs one warning per relaxed rule (``log.warning``); called on every load."""
        for warning in self.warnings:
            log.warning(warning)

    def run(self, pipeline: Pipeline, data: Any, **kwargs: Any) -> LoadInfo:
        """Loads ``data`` with ``pipeline`` after asking srdp again.

        Order: read srdp.toml and check the writer (srdp errors surface as ``duckdb.Error``), check
        the pipeline's destination, apply the rules to the resources (refusals change nothing in
        the lake), log one warning per relaxed rule, create the lake if missing, load. A failure
        whose text holds a secret given to the helper is :class:`SrdpDltLoadError`, redacted.
        """
        current = self.refresh()
        current.check_pipeline(pipeline)
        arguments = current.load_arguments(_resources_of(data), **kwargs)
        current.log_warnings()
        current.prepare()
        failure = None
        try:
            return pipeline.run(data, **arguments)
        except Exception as error:
            failure = current.secret_free_failure(pipeline, error)
            if failure is None:
                raise
        # Raised outside the except block, so dlt's exception (and its secret) is not attached.
        raise failure

    def secret_free_failure(self, pipeline: Pipeline, error: BaseException) -> "SrdpDltLoadError | None":
        """``None`` when ``error`` (with its causes) holds none of the secrets given to the helper;
        otherwise :class:`SrdpDltLoadError` with dlt's text redacted, after redacting dlt's trace
        of the run (``trace.pickle``) and failed-job messages in the pipeline's working folder."""
        secrets = self._secret_texts()
        text = "".join(traceback.format_exception(error))
        if not any(secret in text for secret in secrets):
            return None
        _redact_pipeline_files(pipeline, secrets)
        dlt_text = _redact(str(error), secrets)
        hint = ""
        if "password authentication failed" in dlt_text:
            hint = (
                f" PostgreSQL refused the credentials: check catalog_user and catalog_password "
                f"(the writer role's) given to srdp.ingest.dlt.destination({self.catalog!r}, ...)."
            )
        return SrdpDltLoadError(
            f"srdp.ingest.dlt: dlt failed to load into {self.catalog}.{self.dataset_name} "
            f"(catalog {self.catalog_url}, metadata schema {self.metadata_schema or 'main'}); "
            f"secrets in dlt's error are shown as ***.{hint} dlt's error: {dlt_text}"
        )

    def _catalog_credentials(self) -> str | ConnectionStringCredentials:
        """dlt's ``catalog``: srdp's URL, plus user and password for PostgreSQL."""
        if not self.is_postgres:
            return self.catalog_url
        catalog = ConnectionStringCredentials(self.catalog_url)
        where = (
            f"catalog {self.catalog!r} keeps its metadata in PostgreSQL ({self.catalog_url}, schema "
            f"{self.metadata_schema!r}) and dlt connects to it itself"
        )
        user = self.catalog_user or catalog.username
        if not user:
            raise SrdpDltError(
                f"srdp.ingest.dlt: {where}, as a user the libpq string in {self.config_path} does not "
                f"name: pass catalog_user=... (the writer role) to srdp.ingest.dlt.destination({self.catalog!r}, ...)"
            )
        if self.catalog_password is None:
            raise SrdpDltError(
                f"srdp.ingest.dlt: {where}, with a password: pass catalog_password=... (the writer role's "
                f"password) to srdp.ingest.dlt.destination({self.catalog!r}, ...); srdp.toml never holds it "
                f"(srdp reads it from the DuckDB secret named by writer_secret)"
            )
        if " " in user or " " in self.catalog_password.reveal():
            # dlt 1.31 writes the catalog URL with spaces unencoded, which libpq refuses.
            raise SrdpDltError(
                f"srdp.ingest.dlt: {where}, and dlt cannot pass a user or password containing a space "
                f"to PostgreSQL (libpq refuses the URL dlt writes); use a writer role without spaces"
            )
        catalog.username = user
        catalog.password = self.catalog_password.reveal()
        return catalog

    def _storage(self) -> str | FilesystemConfiguration:
        """dlt's ``storage``: srdp's URL, plus the storage credentials when given."""
        if self.storage_credentials is None:
            return self.storage_url
        if self.storage_url.startswith("file:"):
            raise SrdpDltError(
                f"srdp.ingest.dlt: storage_credentials given, but catalog {self.catalog!r} keeps its data "
                f"in a local folder ({self.storage_url}); leave storage_credentials out"
            )
        return FilesystemConfiguration(bucket_url=self.storage_url, credentials=self.storage_credentials)

    def _secret_texts(self) -> list[str]:
        """The secrets given to the helper in every form dlt or libpq may print, longest first."""
        texts: set[str] = set()
        if self.catalog_password is not None:
            password = self.catalog_password.reveal()
            texts |= {password, quote(password, safe=" +"), quote(password, safe=""), quote_plus(password)}
        creds = self.storage_credentials
        if creds is not None and hasattr(creds, "get_resolvable_fields"):
            for name, hint in creds.get_resolvable_fields().items():
                value = getattr(creds, name, None)
                if is_secret_hint(hint) and isinstance(value, str):
                    texts.add(value)
        return sorted((t for t in texts if t), key=len, reverse=True)

    def _rule_refusal(self, rule: str, what: str, instead: str) -> str:
        return (
            f"srdp.ingest.dlt: rule {rule} refuses this load into {self.catalog}.{self.dataset_name}: "
            f"{what}. Either {instead}, or relax the rule with the line `{rule} = false` under "
            f"[rules] in {self.config_path} (every load then logs a warning)"
        )


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
    request = {"layer": layer, "schema_name": schema_name, "project": project, "writer": writer}
    with srdp.connect(config=config) as con:
        # srdp_dlt_destination checks the writer itself (srdp_check_writer's rules) and lists
        # that check's warning among the load's warnings.
        row = _one(con, "srdp_dlt_destination", [catalog], **request)
        config_path = str(con.execute("SELECT config_path FROM srdp_version()").fetchone()[0])
    warnings = list(row["warnings"] or [])
    contract = json.loads(row["schema_contract"]) if row["schema_contract"] else None
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
        schema_contract=contract,
        data_inlining_row_limit=int(row["data_inlining_row_limit"]),
        warnings=tuple(warnings),
        config_path=config_path,
        request=request,
        catalog_user=catalog_user,
        catalog_password=None if catalog_password is None else _Password(catalog_password),
        storage_credentials=storage_credentials,
    )


def pipeline(
    pipeline_name: str,
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
    **kwargs: Any,
) -> Pipeline:
    """``destination(catalog, ...).pipeline(pipeline_name, **kwargs)`` in one call."""
    target = destination(
        catalog, config=config, layer=layer, schema_name=schema_name, project=project, writer=writer,
        catalog_user=catalog_user, catalog_password=catalog_password, storage_credentials=storage_credentials,
    )
    return target.pipeline(pipeline_name, **kwargs)


def run(pipeline: Pipeline, data: Any, *, destination: DltDestination | None = None, **kwargs: Any) -> LoadInfo:
    """:meth:`DltDestination.run` for a pipeline built by :func:`pipeline` (or pass ``destination``)."""
    target = destination or _DESTINATIONS.get(pipeline)
    if target is None:
        raise SrdpDltError(
            f"srdp.ingest.dlt: pipeline {pipeline.pipeline_name!r} was not built by srdp.ingest.dlt; "
            "build it with srdp.ingest.dlt.pipeline(...) or pass destination="
        )
    return target.run(pipeline, data, **kwargs)


def check_not_filesystem(
    target: Destination | Pipeline,
    config: str | os.PathLike[str] | None = None,
    dataset_name: str | None = None,
) -> None:
    """Refuses dlt's ``filesystem`` destination when it would write into a DuckLake data path.

    ``target`` is a destination or a pipeline (whose ``dataset_name`` is used). dlt writes
    ``<bucket_url>/<dataset_name>/...``; when that overlaps the data path of any catalog in
    srdp.toml, the files would bypass the catalog, so this raises :class:`SrdpDltError` naming the
    catalog, its data path and what to do. Other destinations pass.
    """
    if isinstance(target, Pipeline):
        dataset_name = dataset_name or target.dataset_name
        target = target.destination
    if target is None or target.destination_type != "dlt.destinations.filesystem":
        return
    bucket_url = _bucket_url(target)
    if bucket_url is None:
        return
    written = _location(bucket_url.rstrip("/") + (f"/{dataset_name}" if dataset_name else ""))
    with srdp.connect(config=config) as con:
        catalogs = con.execute("SELECT catalog, data_path FROM srdp_catalogs()").fetchall()
        config_path = con.execute("SELECT config_path FROM srdp_version()").fetchone()[0]
    for catalog, data_path in catalogs:
        lake = _location(data_path)
        if written.startswith(lake) or lake.startswith(written):
            raise SrdpDltError(
                f"srdp.ingest.dlt: dlt's filesystem destination would write {written.rstrip('/')} "
                f"(bucket_url {bucket_url!r}), which overlaps the DuckLake data path {data_path} of catalog "
                f"{catalog!r} in {config_path}; files written there bypass the catalog. Load with the "
                f"ducklake destination from the helper instead: "
                f"srdp.ingest.dlt.destination({catalog!r}, ...).pipeline(...)"
            )


# -- Dagster ---------------------------------------------------------------------------------


@dataclass
class SrdpDltTranslator(DagsterDltTranslator):
    """dagster-dlt's translator with srdp's lineage: ``dagster/table_name`` is the physical table
    (``lake.raw.events``, from ``srdp_table_name``) and the synthetic ``<source>_<resource>``
    upstream dependency dagster-dlt adds is gone. Subclass it for keys, groups and the like."""

    table_names: Mapping[str, str] = field(default_factory=dict)
    """Physical table by dlt resource name."""

    def get_asset_spec(self, data: DltResourceTranslatorData) -> AssetSpec:
        spec = super().get_asset_spec(data)
        synthetic = set(self._default_deps_fn(data.resource))
        metadata = dict(spec.metadata)
        if data.resource.name in self.table_names:
            metadata["dagster/table_name"] = self.table_names[data.resource.name]
        return spec.replace_attributes(
            deps=[dep for dep in spec.deps if dep.asset_key not in synthetic],
            metadata=metadata,
        )


def srdp_dlt_assets(
    *,
    dlt_source: DltSource,
    destination: DltDestination,
    dlt_pipeline: Pipeline | None = None,
    pipeline_name: str | None = None,
    name: str | None = None,
    group_name: str | None = None,
    dagster_dlt_translator: SrdpDltTranslator | None = None,
    **dlt_assets_kwargs: Any,
) -> AssetsDefinition:
    """Dagster assets for ``dlt_source`` loading into ``destination``, over dagster-dlt's
    ``@dlt_assets`` (needs the resource ``dlt=DagsterDltResource()``).

    The pipeline is ``destination.pipeline(pipeline_name or "<source>_<dataset>")`` unless
    ``dlt_pipeline`` is given (it must load into ``destination``); the op is ``name`` or
    ``dlt_<source>_<dataset>``. Each materialization asks srdp again, checks the writer, applies
    the rules to the selected resources (refusing before any load), logs one
    ``context.log.warning`` per relaxed rule, and reports ``dagster/table_name`` as the physical
    table (dagster-dlt alone would report ``<destination>.<dlt schema>.<table>``).
    """
    default_name = f"{dlt_source.name}_{destination.dataset_name}"
    dlt_pipeline = dlt_pipeline or destination.pipeline(pipeline_name or default_name)
    destination.check_pipeline(dlt_pipeline)
    translator = dagster_dlt_translator or SrdpDltTranslator()
    translator.table_names = _table_names(destination, dlt_source)
    resources_by_key = {
        translator.get_asset_spec(DltResourceTranslatorData(resource=r, pipeline=dlt_pipeline)).key: r
        for r in dlt_source.selected_resources.values()
    }
    tables_by_key = {key: translator.table_names[r.name] for key, r in resources_by_key.items()}

    @dlt_assets(
        dlt_source=dlt_source,
        dlt_pipeline=dlt_pipeline,
        name=name or f"dlt_{default_name}",
        group_name=group_name,
        dagster_dlt_translator=translator,
        **dlt_assets_kwargs,
    )
    def _srdp_dlt_assets(context: AssetExecutionContext, dlt: DagsterDltResource) -> Iterator[MaterializeResult]:
        current = destination.refresh()
        current.check_pipeline(dlt_pipeline)
        selected = [r for key, r in resources_by_key.items() if key in context.selected_asset_keys]
        arguments = current.load_arguments(selected)
        current.log_warnings(context.log)
        current.prepare()
        # A fresh copy each run: re-running the very DltSource object in one process (in-process
        # executor, tests) fails in extract with `KeyError: 'name'` on dlt 1.31.0 once
        # dagster-dlt has dropped the pipeline's local state.
        failure = None
        try:
            for event in dlt.run(context=context, dlt_source=dlt_source.clone(), **arguments):
                yield _with_table_name(event, tables_by_key)
        except Exception as error:
            failure = current.secret_free_failure(dlt_pipeline, error)
            if failure is None:
                raise
        if failure is not None:  # outside the except block: dlt's exception is not attached
            raise failure

    return _srdp_dlt_assets


# -- internals -------------------------------------------------------------------------------


def _one(con: duckdb.DuckDBPyConnection, function: str, args: Sequence[Any], **named: Any) -> dict[str, Any]:
    """The single row of an srdp table function as a dict; ``None`` named arguments are left out."""
    rows = srdp.call(con, function, *args, **named)
    if not rows:
        raise SrdpDltError(f"srdp.ingest.dlt: {function} returned no row")
    return rows[0]


def _identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _refuse_overrides(kwargs: Mapping[str, Any], where: str) -> None:
    for key in _DDL_KWARGS:
        if kwargs.get(key) is not None:
            raise SrdpDltError(f"srdp.ingest.dlt: {where} takes no {key}=: srdp.toml decides it")


def _disposition(value: Any) -> str:
    """``'replace'`` for ``'replace'`` and ``{'disposition': 'replace', ...}``."""
    if isinstance(value, Mapping):
        return str(value.get("disposition", "append"))
    return str(value) if isinstance(value, str) else f"<dynamic {value!r}>"


def _contract(value: Any) -> dict[str, str]:
    """A dlt schema contract as a dict (``'freeze'`` means freeze for tables, columns, data_type)."""
    if value is None:
        return {}
    if isinstance(value, str):
        return {"tables": value, "columns": value, "data_type": value}
    return dict(value)


def _resources_of(data: Any) -> list[DltResource]:
    """The dlt resources in ``data`` (a source, a resource, or a list of them); plain data has none."""
    if isinstance(data, DltSource):
        return list(data.selected_resources.values())
    if isinstance(data, DltResource):
        return [data]
    if isinstance(data, (list, tuple)) and any(isinstance(d, (DltSource, DltResource)) for d in data):
        return [r for d in data for r in _resources_of(d)]
    return []


def _table_names(target: DltDestination, source: DltSource) -> dict[str, str]:
    """Physical table by resource name, normalized the way dlt names the table."""
    naming = source.schema.naming
    names: dict[str, str] = {}
    with srdp.connect(config=target.config_path) as con:
        for resource in source.selected_resources.values():
            table = resource.table_name if isinstance(resource.table_name, str) else resource.name
            row = _one(con, "srdp_table_name", [target.catalog, target.dataset_name, naming.normalize_table_identifier(table)])
            names[resource.name] = str(row["qualified_name"])
    return names


def _with_table_name(event: Any, tables_by_key: Mapping[AssetKey, str]) -> Any:
    """dagster-dlt's materialization with ``dagster/table_name`` set to the physical table."""
    if isinstance(event, MaterializeResult) and event.asset_key in tables_by_key:
        metadata = {**(event.metadata or {}), "dagster/table_name": tables_by_key[event.asset_key]}
        return MaterializeResult(asset_key=event.asset_key, metadata=metadata)
    return event


def _redact(text: str, secrets: Sequence[str]) -> str:
    for secret in secrets:  # longest first, so a form containing another is replaced whole
        text = text.replace(secret, "***")
    return text


def _redacted(value: Any, secrets: Sequence[str]) -> Any:
    """``value`` (dlt's trace: named tuples, lists, dicts, strings) with every secret redacted."""
    if isinstance(value, str):
        return _redact(value, secrets)
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return value._replace(**{f: _redacted(getattr(value, f), secrets) for f in value._fields})
    if isinstance(value, (list, tuple)):
        return type(value)(_redacted(v, secrets) for v in value)
    if isinstance(value, dict):
        return {k: _redacted(v, secrets) for k, v in value.items()}
    return value


def _redact_pipeline_files(pipeline: Pipeline, secrets: Sequence[str]) -> None:
    """Redacts what dlt keeps of a failed run: its trace (in memory and ``trace.pickle``) and the
    ``*.exception`` files of failed jobs in the pipeline's working folder."""
    trace = pipeline.last_trace
    if trace is not None:
        clean = _redacted(trace, secrets)
        try:
            dumped = pickle.dumps(clean)
        except Exception:  # dlt could not have saved it either
            dumped = b""
        if any(s.encode() in dumped for s in secrets):
            clean = None  # a part this walk does not know: drop the trace rather than keep the secret
        # dlt has no public way to replace the trace it holds; last_trace reads _last_trace first.
        pipeline._last_trace = clean
        trace_file = Path(pipeline.working_dir, TRACE_FILE_NAME)
        if clean is None:
            trace_file.unlink(missing_ok=True)
        else:
            save_trace(pipeline.working_dir, clean)
    for path in Path(pipeline.working_dir).rglob("*.exception"):
        text = path.read_text(errors="replace")
        if any(s in text for s in secrets):
            path.write_text(_redact(text, secrets))


def _bucket_url(target: Destination) -> str | None:
    """The filesystem destination's ``bucket_url``: given to the factory, or from dlt's config."""
    if target.config_params.get("bucket_url"):
        return str(target.config_params["bucket_url"])
    try:
        return str(target.configuration(target.spec(), accept_partial=True).bucket_url)
    except Exception:  # credentials that do not resolve: the bucket_url alone is enough
        value = dlt.config.get(f"destination.{target.destination_name}.bucket_url")
        return str(value) if value else None


def _location(url_or_path: str) -> str:
    """A comparable location with a trailing slash: an absolute local path or ``scheme://bucket/...``."""
    parsed = urlparse(url_or_path)
    if parsed.scheme in ("", "file"):
        local = parsed.path if parsed.scheme == "file" else url_or_path
        return os.path.realpath(os.path.abspath(local)).rstrip("/") + "/"
    return url_or_path.rstrip("/") + "/"
