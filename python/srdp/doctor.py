"""``python -m srdp doctor``: is this environment ready to use srdp with a definition file?

Read-only unless ``--create`` is given: it never creates a lake, a folder or a file.

Checks, in order, each printed as one line (``ok   <subject>: <detail>`` or
``FAIL <subject>: <what is wrong or missing>``):

1. ``extension directory``: ducklake, sqlite_scanner, postgres_scanner and httpfs are installed
   there (outside a checkout, srdp first fills it from the extension wheels, offline);
2. ``extension``: the srdp file is found (and from where) and loads into this DuckDB;
3. ``config``: the definition file (``--config``, else what srdp finds: ``$SRDP_CONFIG`` or
   ``./srdp.toml``) is valid, and which catalogs it defines (``srdp_catalogs()``);
   ``secrets`` (only with ``--secret-env NAME``, repeatable): each named environment variable
   holds one CREATE SECRET statement DuckDB accepts, the same ``*_SECRET_SQL`` variables Dagster's
   ``secrets=[dg.EnvVar(...)]`` reads. Every attach below runs them first (temporary secrets, on
   its own connection), so the recommended set-up, secrets only from the environment, is checked
   as it runs; a statement is never shown (nor DuckDB's message about it, which quotes it);
4. ``catalog <name>``: first a reader's ``srdp_attach_catalog`` (which never creates anything)
   tells whether the lake exists. A lake that does not exist yet is one line, "not created yet
   (the writer's first attach creates it...)", and no attach as writer is tried, since that would
   create it; ``create=True`` (``--create``) lets the writer's attach create it. An existing lake
   is attached as each role asked for (writer, then reader), each on its own in-memory connection.
   When the reader's attach fails for another reason on a PostgreSQL catalog, whether the lake
   exists is unknown, so the writer is not checked without ``--create``;
5. ``extras``: which extras of the srdp wheel (dagster, dbt, dlt, ingest, pandas, polars) are
   importable (``import`` finds their modules; they are not imported, which takes seconds), and
   the ``pip install`` line of each one that is not (always ``ok``: an extra is optional).
   Reported even when an earlier check failed.

A check that cannot run because an earlier one failed is not run. The first line gives the
versions of srdp, DuckDB and Python. Messages come from srdp, which redacts secrets.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import duckdb

import srdp
from srdp import extension_wheels, install
from srdp.sql import literal

__all__ = ["Check", "EXTRA_MODULES", "NOT_CREATED", "ROLES", "checks", "extras", "report", "srdp_message", "versions"]

#: Roles checked by default, in this order.
ROLES = ("writer", "reader")

#: What doctor says of a catalog whose lake does not exist yet (and that it left alone).
NOT_CREATED = "not created yet (the writer's first attach creates it; --create creates it now)"

#: Extra of ``pip install 'srdp[<extra>]'`` -> the modules it makes importable (pyproject.toml).
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "dagster": ("dagster", "pyarrow"),
    "dbt": ("dagster_dbt", "dbt.adapters.duckdb", "pyarrow"),
    "dlt": ("dlt",),
    "ingest": ("dlt", "dagster", "dagster_dlt", "pyarrow", "s3fs"),
    "pandas": ("pandas", "pyarrow"),
    "polars": ("polars", "pyarrow"),
}


@dataclass(frozen=True)
class Check:
    """One line of the report."""

    ok: bool
    subject: str
    detail: str

    def line(self) -> str:
        return f"{'ok  ' if self.ok else 'FAIL'} {self.subject}: {self.detail}"


def versions() -> str:
    """srdp's, DuckDB's and Python's versions, and where this srdp package is."""
    try:
        package = metadata.version("srdp")
    except metadata.PackageNotFoundError:
        package = "(not installed)"
    where = Path(srdp.__file__).resolve().parent
    python = sys.version.split()[0]
    return f"srdp {package} at {where}; DuckDB {duckdb.__version__}; Python {python} at {sys.prefix}"


def checks(
    config: Path | None, roles: Sequence[str] = ROLES, create: bool = False, secret_env: Sequence[str] = ()
) -> Iterator[Check]:
    """The checks of the module docstring, as they run (so a caller can print each at once);
    ``secret_env``: names of environment variables holding CREATE SECRET statements."""
    yield from _setup_and_catalogs(config, roles, create, tuple(secret_env))
    yield extras()


def _setup_and_catalogs(
    config: Path | None, roles: Sequence[str], create: bool, secret_env: tuple[str, ...] = ()
) -> Iterator[Check]:
    directory, where = install.extension_directory_source()
    directory_check = _extension_directory(directory, where)
    yield directory_check
    location = install.find_extension()
    if not location.path.is_file():
        yield Check(False, "extension", install.not_found_message(location.path))
        return
    settings = install.duckdb_settings(directory)
    try:
        con = _open(location.path, settings)
    except duckdb.Error as error:
        yield Check(False, "extension", f"{location.path} ({location.source}) does not load: {srdp_message(error)}")
        return
    try:
        ext_version, duckdb_version = con.execute("SELECT extension_version, duckdb_version FROM srdp_version()").fetchone()
        yield Check(True, "extension", f"{location.path} ({location.source}), {ext_version}, loads into DuckDB {duckdb_version}")
    except duckdb.Error:  # srdp_version() reads $SRDP_CONFIG too: the config check says what is wrong
        yield Check(True, "extension", f"{location.path} ({location.source}) loads into DuckDB v{duckdb.__version__}")
    try:
        found = _config_check(con, config)
        yield found.check
        if not found.check.ok or not directory_check.ok:
            return
        statements: tuple[str, ...] = ()
        if secret_env:
            secrets_check, statements = _secrets_check(con, secret_env)
            yield secrets_check
            if not secrets_check.ok:
                return
    finally:
        con.close()
    for catalog in found.catalogs:
        yield from _catalog(location.path, settings, found.path, catalog, roles, create, statements)


def _secrets_check(con: duckdb.DuckDBPyConnection, names: Sequence[str]) -> tuple[Check, tuple[str, ...]]:
    """The ``secrets`` line, and the statements of the environment variables ``names`` (each one
    CREATE SECRET statement, checked by running it on ``con``, an in-memory connection: the
    secrets are temporary and go with it)."""
    from srdp.lake.session import create_secret  # the IO manager's check-then-run, shared

    statements = []
    for name in names:
        statement = os.environ.get(name)
        if not statement:
            state = "is empty" if name in os.environ else "is not set"
            return Check(False, "secrets", f"environment variable {name} {state}; it must hold one CREATE SECRET statement"), ()
        problem = create_secret(con, statement)
        if problem is not None:
            return Check(False, "secrets", f"environment variable {name}: {problem}; the statement and DuckDB's "
                         "message are not shown because they may hold credentials"), ()
        statements.append(statement)
    count = f"{len(names)} CREATE SECRET statement{'s' if len(names) != 1 else ''}"
    return Check(True, "secrets", f"{count} from {', '.join(names)}, run before each attach"), tuple(statements)


def _catalog(
    extension: Path, settings: dict[str, str], config: Path | None, catalog: _Catalog,
    roles: Sequence[str], create: bool, statements: Sequence[str] = (),
) -> Iterator[Check]:
    """One catalog's lines. Whether its lake exists is found out without creating anything: a
    local metadata file exists and is not empty (srdp's own test for a reader), or, on
    PostgreSQL, a reader's attach (which never creates anything) finds it. The writer's attach,
    which creates a missing lake, runs only on an existing lake or with ``create``."""
    subject = f"catalog {catalog.name}"
    probe: Check | None = None
    if catalog.metadata_file is not None:
        missing = not (catalog.metadata_file.is_file() and catalog.metadata_file.stat().st_size > 0)
    else:
        probe = _attach(extension, settings, config, catalog.name, "reader", statements)
        missing = not probe.ok and srdp.no_lake_yet(probe.detail)
    if missing and not create:
        yield Check(True, subject, NOT_CREATED)
        return
    unknown = probe is not None and not probe.ok and not missing
    if missing:  # and create: the writer's attach creates it, then the reader finds it
        roles = ("writer", *(r for r in roles if r != "writer"))
    for role in roles:
        if role == "reader" and probe is not None and not missing:
            yield probe
        elif role == "writer" and unknown and not create:
            yield Check(False, subject, "attach as writer not checked: the reader's attach failed, so whether the lake "
                        "exists is unknown and the writer's attach could create it; --create checks it anyway")
        elif role == "writer" and missing:
            created = _attach(extension, settings, config, catalog.name, "writer", statements)
            yield Check(created.ok, subject, created.detail + (", which created the lake" if created.ok else ""))
        else:
            yield _attach(extension, settings, config, catalog.name, role, statements)


def extras() -> Check:
    """Which extras' modules ``import`` finds (found, not imported: importing dagster and dbt
    takes seconds)."""
    importable, broken = [], []
    for extra, modules in EXTRA_MODULES.items():
        if all(_imports(module) for module in modules):
            importable.append(extra)
        else:
            broken.append(f"{extra} (pip install 'srdp[{extra}]')")
    detail = f"importable: {', '.join(importable) or 'none'}"
    if broken:
        detail += f"; not importable: {', '.join(broken)}"
    return Check(True, "extras", detail)


def _imports(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package is missing or broken
        return False


def _extension_directory(directory: Path, where: str) -> Check:
    subject = "extension directory"
    if where != "checkout":
        try:
            extension_wheels.ensure_installed(directory)
        except (extension_wheels.ExtensionWheelError, OSError) as error:
            return Check(False, subject, f"{directory} ({where}): {error}")
    absent = extension_wheels.missing(directory)
    if absent:
        hint = "; run `make python-env`" if where == "checkout" else ""
        return Check(False, subject, f"{directory} ({where}) lacks {', '.join(absent)}{hint}")
    return Check(True, subject, f"{directory} ({where}): {', '.join(extension_wheels.EXTENSIONS.values())}")


@dataclass(frozen=True)
class _Catalog:
    name: str
    metadata_file: Path | None  # the local metadata file (SQLite, DuckDB); None on PostgreSQL


@dataclass(frozen=True)
class _Config:
    check: Check
    path: Path | None = None
    catalogs: tuple[_Catalog, ...] = ()


def _config_check(con: duckdb.DuckDBPyConnection, config: Path | None) -> _Config:
    if config is not None:  # srdp reads it: a missing, unreadable or not-a-file path is its error
        path = Path(os.path.abspath(config))
        con.execute(f"SET srdp_config = {literal(str(path))}")
    else:
        try:
            (found,) = con.execute("SELECT config_path FROM srdp_version()").fetchone()
        except duckdb.Error as error:  # $SRDP_CONFIG names a file srdp cannot read
            return _Config(Check(False, "config", srdp_message(error).removeprefix("srdp_version: ")))
        if found is None:
            return _Config(Check(False, "config", "no srdp.toml found: pass --config, set SRDP_CONFIG or run where srdp.toml is"))
        path = Path(found)
    try:
        rows = srdp.call(con, "srdp_catalogs")
    except duckdb.Error as error:
        origin = "--config" if config is not None else "$SRDP_CONFIG or ./srdp.toml"
        message = srdp_message(error).replace("(from SET srdp_config)", f"(from {origin})")
        return _Config(Check(False, "config", f"{path}: {message}"))
    rows = sorted(rows, key=lambda r: str(r["catalog"]))
    if not rows:
        return _Config(Check(False, "config", f"{path} defines no catalog"), path)
    described = ", ".join(f"{r['catalog']} ({r['backend']})" for r in rows)
    count = f"{len(rows)} catalog{'s' if len(rows) != 1 else ''}"
    catalogs = tuple(_Catalog(str(r["catalog"]), _metadata_file(str(r["backend"]), str(r["metadata"]))) for r in rows)
    return _Config(Check(True, "config", f"{path}: {count}: {described}"), path, catalogs)


def _metadata_file(backend: str, metadata: str) -> Path | None:
    """The local metadata file of ``srdp_catalogs()``'s ``metadata`` (absolute, as srdp resolved
    it: ``sqlite:<path>`` or a DuckDB file path); None for PostgreSQL."""
    if backend == "sqlite":
        return Path(metadata.removeprefix("sqlite:"))
    if backend == "duckdb":
        return Path(metadata.removeprefix("duckdb:"))
    return None


def _attach(
    extension: Path, settings: dict[str, str], config: Path | None, catalog: str, role: str,
    statements: Sequence[str] = (),
) -> Check:
    subject = f"catalog {catalog}"
    try:
        con = _open(extension, settings)
    except duckdb.Error as error:
        return Check(False, subject, f"attach as {role} not checked: {srdp_message(error)}")
    try:
        for statement in statements:  # checked by _secrets_check; temporary, on this connection
            con.execute(statement)
        con.execute(f"SET srdp_config = {literal(str(config))}")
        (row,) = srdp.call(con, "srdp_attach_catalog", catalog, role=role)
        mode = "read-only" if row["read_only"] else "read-write"
        # srdp's runner connection keeps this in-memory database open after con.close(): a
        # DuckDB metadata file left attached would refuse the next role's attach ("Unique file
        # handle conflict").
        alias = str(row["alias"]).replace('"', '""')
        con.execute(f'DETACH "{alias}"')
        return Check(True, subject, f"attaches as {role} ({mode})")
    except duckdb.Error as error:
        return Check(False, subject, f"attach as {role} failed: {srdp_message(error)}")
    finally:
        con.close()


def _open(extension: Path, settings: dict[str, str]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(":memory:", config=dict(settings))
    try:
        con.execute(f"LOAD {literal(str(extension))}")
    except duckdb.Error:
        con.close()
        raise
    return con


def srdp_message(error: duckdb.Error) -> str:
    """DuckDB's error without its kind prefix (``Binder Error: ``) and the query excerpt
    (``LINE 1: ...``) that follows the message: srdp's message as srdp wrote it."""
    text = re.sub(r"^[A-Z][A-Za-z ]* Error: ", "", str(error))
    return re.split(r"\n\nLINE \d+:", text)[0].strip()


def report(
    config: Path | None, roles: Sequence[str], write: Callable[[str], object], create: bool = False,
    secret_env: Sequence[str] = (),
) -> tuple[int, int]:
    """Runs the checks, writing each line as it comes; (failed, total)."""
    write(versions())
    failed = total = 0
    for check in checks(config, roles, create, secret_env):
        write(check.line())
        total += 1
        failed += not check.ok
    return failed, total
