"""What dlt's filesystem destination left in one landing dataset folder, read as loads.

dlt 1.31 writes, per load: data files ``<table>/<load_id>.<file_id>.<ext>``, then the state file
``_dlt_pipeline_state/<pipeline>__<load_id>__<hash>.jsonl``, then the marker
``_dlt_loads/<schema>__<load_id>.jsonl`` LAST (pipeline and schema names may hold ``__``, so the
names are split from the right, as dlt splits them). A load with a marker is finished; data or a
state file without one is unfinished (dlt crashed or is still writing). ``init`` marks the dataset as
initialised; ``_dlt_version/`` holds its schemas. The zone is read and cleaned through
``pyarrow.fs`` (a local folder and ``s3://`` behave the same; S3 takes dlt's ``AwsCredentials``).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

__all__ = ["Load", "LandingZone", "StateFile", "UnreadableFile"]

LOADS = "_dlt_loads"
STATE = "_dlt_pipeline_state"
VERSION = "_dlt_version"
INIT = "init"
DLT_FOLDERS = frozenset({LOADS, STATE, VERSION})
#: dlt's separator in its own file names (``FILENAME_SEPARATOR`` of its filesystem client).
SEPARATOR = "__"


def load_sort_key(load_id: str) -> tuple[float, str]:
    """dlt's load ids are unix timestamps (``1796314946.1443524``): order by time."""
    try:
        return (float(load_id), load_id)
    except ValueError:
        return (float("inf"), load_id)


@dataclass
class Load:
    """One dlt load in the zone: its data files by table, its marker and state files."""

    load_id: str
    marker: str | None = None
    """The ``_dlt_loads`` file (``None``: the load is unfinished)."""
    schema_name: str | None = None
    files: dict[str, list[str]] = field(default_factory=dict)
    """Data file paths by table (``orders``, ``orders__items``)."""
    state_files: list[str] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        return self.marker is not None

    @property
    def created(self) -> float:
        """When dlt made the load (seconds since the epoch, from the load id)."""
        return load_sort_key(self.load_id)[0]


@dataclass(frozen=True)
class StateFile:
    pipeline: str
    load_id: str
    path: str


class LandingZone:
    """One landing dataset folder (``<landing_path>/<dataset>/``), local or object storage."""

    def __init__(self, url: str, credentials: Any = None) -> None:
        self.url = url.rstrip("/") + "/"
        self.fs, self.root = _filesystem(url, credentials)

    def path(self, *parts: str) -> str:
        return posixpath.join(self.root, *parts) if parts and parts != ("",) else self.root

    def _list(self, folder: str, directories: bool = False) -> list[str]:
        wanted = pafs.FileType.Directory if directories else pafs.FileType.File
        selector = pafs.FileSelector(self.path(folder), allow_not_found=True)
        return sorted(info.path for info in self.fs.get_file_info(selector) if info.type == wanted)

    def loads(self) -> list[Load]:
        """Every load the zone holds, finished or not, oldest first (a fresh listing)."""
        loads: dict[str, Load] = {}

        def load(load_id: str) -> Load:
            return loads.setdefault(load_id, Load(load_id))

        for marker in self._list(LOADS):
            parsed = parse_marker_name(posixpath.basename(marker))
            if parsed is not None:
                found = load(parsed[1])
                found.marker, found.schema_name = marker, parsed[0]
        for state in self.state_files():
            load(state.load_id).state_files.append(state.path)
        for folder in self._list("", directories=True):
            table = posixpath.basename(folder.rstrip("/"))
            if table in DLT_FOLDERS:
                continue
            for data in self._list(table):
                load_id = _load_id_of_data_file(posixpath.basename(data))
                if load_id is not None:
                    load(load_id).files.setdefault(table, []).append(data)
        return sorted(loads.values(), key=lambda item: load_sort_key(item.load_id))

    def state_files(self) -> list[StateFile]:
        found = []
        for path in self._list(STATE):
            parsed = parse_state_name(posixpath.basename(path))
            if parsed is not None:
                found.append(StateFile(pipeline=parsed[0], load_id=parsed[1], path=path))
        return found

    def version_files(self) -> list[str]:
        return self._list(VERSION)

    def has_init(self) -> bool:
        return self.fs.get_file_info(self.path(INIT)).type == pafs.FileType.File

    def read(self, paths: Iterable[str]) -> pa.Table:
        """The rows of the given Parquet files as one Arrow table (columns unified by name).

        Raises :class:`UnreadableFile` naming the first file it cannot take: not ``.parquet``
        (srdp lands Parquet only), zero bytes, content Parquet cannot parse (truncated, corrupt),
        or columns whose types conflict with the files read before it. Each file's bytes are
        fetched first and parsed from memory, so a storage failure (network, permissions) raises
        as itself and is never taken for a bad file.
        """
        tables: list[pa.Table] = []
        schema: pa.Schema | None = None
        for path in sorted(paths):
            url = self.url + posixpath.relpath(path, self.root)
            extension = posixpath.splitext(path)[1]
            if extension != ".parquet":
                raise UnreadableFile(url, (
                    f"which is not Parquet ({extension or 'no extension'}): srdp's landing zone is loaded as "
                    "Parquet only, so it is not this zone's dlt output"
                ))
            with self.fs.open_input_file(path) as source:
                data = source.read_buffer()
            if data.size == 0:
                raise UnreadableFile(url, "which is empty (0 bytes)")
            try:
                table = pq.read_table(pa.BufferReader(data))
            except (pa.ArrowInvalid, OSError) as error:  # parsing memory: the content is bad
                why = " ".join(str(error).removeprefix("Could not open Parquet input source '<Buffer>': ").split())
                raise UnreadableFile(url, f"which Parquet cannot read (truncated or corrupt: {why})") from None
            try:
                schema = table.schema if schema is None else pa.unify_schemas(
                    [schema, table.schema], promote_options="default"
                )
            except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
                raise UnreadableFile(url, (
                    f"whose columns do not fit the load's other files of this table ({error})"
                )) from None
            tables.append(table)
        if not tables:
            return pa.table({})
        return pa.concat_tables(tables, promote_options="default") if len(tables) > 1 else tables[0]

    def delete(self, paths: Iterable[str]) -> list[str]:
        """Deletes the files; returns those deleted (one missing already is not an error)."""
        deleted = []
        for path in paths:
            if self.fs.get_file_info(path).type != pafs.FileType.File:
                continue
            self.fs.delete_file(path)
            deleted.append(path)
        return deleted


def _filesystem(url: str, credentials: Any) -> tuple[pafs.FileSystem, str]:
    """pyarrow's filesystem for ``url`` and the root path it takes (``bucket/prefix`` for S3)."""
    if url.startswith("s3://"):
        options: dict[str, Any] = {}
        if credentials is not None:
            endpoint = getattr(credentials, "endpoint_url", None)
            options = {
                "access_key": getattr(credentials, "aws_access_key_id", None),
                "secret_key": getattr(credentials, "aws_secret_access_key", None),
                "session_token": getattr(credentials, "aws_session_token", None),
                "region": getattr(credentials, "region_name", None) or "us-east-1",
            }
            if endpoint:
                scheme, _, host = str(endpoint).partition("://")
                options.update(endpoint_override=host or scheme, scheme=scheme if host else "https")
        return pafs.S3FileSystem(**{k: v for k, v in options.items() if v is not None}), url[5:].rstrip("/")
    if "://" in url and not url.startswith("file://"):
        raise ValueError(f"srdp.ingest.landing: landing zone {url} is neither a local folder nor s3://")
    return pafs.LocalFileSystem(), (url[len("file://"):] if url.startswith("file://") else url).rstrip("/")


def parse_marker_name(name: str) -> tuple[str, str] | None:
    """``<schema>__<load_id>.jsonl`` -> (schema, load id), split from the right as dlt writes it:
    a schema name may hold ``__`` (``my__pipe__1796314946.14.jsonl``), a load id never does."""
    parts = posixpath.splitext(name)[0].rsplit(SEPARATOR, 1)
    return (parts[0], parts[1]) if len(parts) == 2 and all(parts) else None


def parse_state_name(name: str) -> tuple[str, str] | None:
    """``<pipeline>__<load_id>__<hash>.jsonl`` -> (pipeline, load id), split from the right as dlt
    reads it (``rsplit(FILENAME_SEPARATOR, maxsplit=2)`` in its filesystem client): a pipeline name
    may hold ``__``, a load id and the hex hash never do."""
    parts = posixpath.splitext(name)[0].rsplit(SEPARATOR, 2)
    return (parts[0], parts[1]) if len(parts) == 3 and all(parts) else None


def _load_id_of_data_file(name: str) -> str | None:
    """``1796314946.1443524.77f62795ad.parquet`` -> ``1796314946.1443524`` (dlt's default layout)."""
    parts = name.split(".")
    if len(parts) < 4:
        return None
    return ".".join(parts[:-2])


class UnreadableFile(Exception):
    """A landed data file the promotion cannot take (:meth:`LandingZone.read`); its load is
    quarantined with this reason."""

    def __init__(self, url: str, problem: str) -> None:
        super().__init__(f"{url}, {problem}")
        self.url = url
        """The file, as the zone's URL plus its path in the zone."""
        self.problem = problem
        """What is wrong with it, a clause (``which is empty (0 bytes)``)."""
