"""``python -m srdp doctor``: is this environment ready to use srdp with a definition file?

Checks, in order, each printed as one line (``ok   <subject>: <detail>`` or
``FAIL <subject>: <what is wrong or missing>``):

1. ``extension directory``: ducklake, sqlite_scanner, postgres_scanner and httpfs are installed
   there (outside a checkout, srdp first fills it from the extension wheels, offline);
2. ``extension``: the srdp file is found (and from where) and loads into this DuckDB;
3. ``config``: the definition file (``--config``, else what srdp finds: ``$SRDP_CONFIG`` or
   ``./srdp.toml``) is valid, and which catalogs it defines (``srdp_catalogs()``);
4. ``catalog <name>``: ``srdp_attach_catalog`` as each role asked for (writer, then reader), each
   on its own in-memory connection. Attaching as writer creates a lake that does not exist yet,
   as any writer's first attach does; ``--role reader`` checks the reader only.

A check that cannot run because an earlier one failed is not run. The first line gives the
versions of srdp, DuckDB and Python. Messages come from srdp, which redacts secrets.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import duckdb

import srdp
from srdp import extension_wheels, install

__all__ = ["Check", "ROLES", "checks", "report", "versions"]

#: Roles checked by default, in this order (the writer creates a lake the reader then finds).
ROLES = ("writer", "reader")


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


def checks(config: Path | None, roles: Sequence[str] = ROLES) -> Iterator[Check]:
    """The checks of the module docstring, as they run (so a caller can print each at once)."""
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
        ext_version, duckdb_version = con.execute("SELECT extension_version, duckdb_version FROM srdp_version()").fetchone()
    except duckdb.Error as error:
        yield Check(False, "extension", f"{location.path} ({location.source}) does not load: {_message(error)}")
        return
    yield Check(True, "extension", f"{location.path} ({location.source}), {ext_version}, loads into DuckDB {duckdb_version}")
    try:
        found = _config_check(con, config)
        yield found.check
        if not found.check.ok or not directory_check.ok:
            return
    finally:
        con.close()
    for catalog in found.catalogs:
        for role in roles:
            yield _attach(location.path, settings, found.path, catalog, role)


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
class _Config:
    check: Check
    path: Path | None = None
    catalogs: tuple[str, ...] = ()


def _config_check(con: duckdb.DuckDBPyConnection, config: Path | None) -> _Config:
    if config is not None:
        if not config.is_file():
            return _Config(Check(False, "config", f"no such file: {config}"))
        path = config.resolve()
        con.execute(f"SET srdp_config = '{_literal(str(path))}'")
    else:
        (found,) = con.execute("SELECT config_path FROM srdp_version()").fetchone()
        if found is None:
            return _Config(Check(False, "config", "no srdp.toml found: pass --config, set SRDP_CONFIG or run where srdp.toml is"))
        path = Path(found)
    try:
        rows = srdp.call(con, "srdp_catalogs")
    except duckdb.Error as error:
        return _Config(Check(False, "config", f"{path}: {_message(error)}"))
    names = tuple(sorted(str(r["catalog"]) for r in rows))
    if not names:
        return _Config(Check(False, "config", f"{path} defines no catalog"), path)
    described = ", ".join(f"{r['catalog']} ({r['backend']})" for r in sorted(rows, key=lambda r: str(r["catalog"])))
    count = f"{len(names)} catalog{'s' if len(names) != 1 else ''}"
    return _Config(Check(True, "config", f"{path}: {count}: {described}"), path, names)


def _attach(extension: Path, settings: dict[str, str], config: Path | None, catalog: str, role: str) -> Check:
    subject = f"catalog {catalog}"
    try:
        con = _open(extension, settings)
    except duckdb.Error as error:
        return Check(False, subject, f"attach as {role} not checked: {_message(error)}")
    try:
        con.execute(f"SET srdp_config = '{_literal(str(config))}'")
        (row,) = srdp.call(con, "srdp_attach_catalog", catalog, role=role)
        mode = "read-only" if row["read_only"] else "read-write"
        return Check(True, subject, f"attaches as {role} ({mode})")
    except duckdb.Error as error:
        return Check(False, subject, f"attach as {role} failed: {_message(error)}")
    finally:
        con.close()


def _open(extension: Path, settings: dict[str, str]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(":memory:", config=dict(settings))
    try:
        con.execute(f"LOAD '{_literal(str(extension))}'")
    except duckdb.Error:
        con.close()
        raise
    return con


def _message(error: duckdb.Error) -> str:
    """DuckDB's error without its kind prefix (``Binder Error: ``) and the query excerpt
    (``LINE 1: ...``) that follows the message: srdp's message as srdp wrote it."""
    text = re.sub(r"^[A-Z][A-Za-z ]* Error: ", "", str(error))
    return re.split(r"\n\nLINE \d+:", text)[0].strip()


def _literal(text: str) -> str:
    return text.replace("'", "''")


def report(config: Path | None, roles: Sequence[str], write: Callable[[str], object]) -> tuple[int, int]:
    """Runs the checks, writing each line as it comes; (failed, total)."""
    write(versions())
    failed = total = 0
    for check in checks(config, roles):
        write(check.line())
        total += 1
        failed += not check.ok
    return failed, total
