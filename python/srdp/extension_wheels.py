"""DuckDB's extensions from their PyPI wheels, installed into an extension directory offline.

A ``duckdb-extension-<name>==1.5.5`` wheel only drops its file at
``site-packages/duckdb_extension_<name>/extensions/v1.5.5/<name>.duckdb_extension``. DuckDB
autoloads extensions from ``<extension_directory>/v1.5.5/<platform>/<canonical>.duckdb_extension``
(sqlite -> sqlite_scanner, postgres -> postgres_scanner), so :func:`ensure_installed` runs
``INSTALL '<wheel file>'`` for each one missing or out of date there.

Concurrent first uses (several Dagster step processes) are safe: each process installs into a
private staging folder next to the target and moves the finished files in with ``os.replace``,
so a reader sees the old file or the new one, never half a file. A file already there with the
size of the wheel's file counts as installed (as in ``scripts/install_extensions.py``), so a later
use costs a few ``stat`` calls and a directory filled in advance may be read-only.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import duckdb

__all__ = ["EXTENSIONS", "ExtensionWheelError", "WheelExtension", "ensure_installed", "missing", "wheel_extensions"]

#: wheel name (``duckdb-extension-<name>``) -> the name DuckDB installs and loads it under
EXTENSIONS = {
    "ducklake": "ducklake",
    "sqlite": "sqlite_scanner",
    "postgres": "postgres_scanner",
    "httpfs": "httpfs",
}

_done: set[Path] = set()


class ExtensionWheelError(Exception):
    """An extension wheel is missing from this environment, or installing its file failed."""


@dataclass(frozen=True)
class WheelExtension:
    """One extension of a wheel: where the wheel put it and where DuckDB wants it."""

    wheel: str  # ducklake, sqlite, postgres, httpfs
    name: str  # the name DuckDB loads it under
    source: Path  # the wheel's file in site-packages
    target: Path  # <directory>/<version>/<platform>/<name>.duckdb_extension


def duckdb_version_and_platform() -> tuple[str, str]:
    """(``v1.5.5``, ``linux_amd64``): the layout keys of this DuckDB."""
    con = duckdb.connect(":memory:")
    try:
        version = con.execute("SELECT library_version FROM pragma_version()").fetchone()[0]
        platform = con.execute("PRAGMA platform").fetchone()[0]
    finally:
        con.close()
    return str(version), str(platform)


def wheel_extensions(directory: Path, version: str | None = None, platform: str | None = None) -> list[WheelExtension]:
    """The four extensions, with their wheel files and their places in ``directory``."""
    if version is None or platform is None:
        version, platform = duckdb_version_and_platform()
    site_packages = Path(duckdb.__file__).resolve().parents[1]
    return [
        WheelExtension(
            wheel,
            name,
            site_packages / f"duckdb_extension_{wheel}" / "extensions" / version / f"{wheel}.duckdb_extension",
            directory / version / platform / f"{name}.duckdb_extension",
        )
        for wheel, name in EXTENSIONS.items()
    ]


def missing(directory: Path) -> list[str]:
    """The extensions (DuckDB names) that ``directory`` lacks."""
    return [e.name for e in wheel_extensions(directory) if not e.target.is_file()]


def ensure_installed(directory: Path) -> None:
    """Installs every extension wheel's file into ``directory`` unless already there (offline)."""
    directory = Path(os.path.abspath(directory))
    if directory in _done:
        return
    extensions = wheel_extensions(directory)
    absent = [e for e in extensions if not e.source.is_file()]
    if absent:
        version = extensions[0].target.parent.parent.name.lstrip("v")
        wheels = " ".join(f"duckdb-extension-{e.wheel}=={version}" for e in absent)
        raise ExtensionWheelError(
            f"srdp: DuckDB extension files missing from this environment: "
            f"{', '.join(str(e.source) for e in absent)}; pip install {wheels}"
        )
    stale = [e for e in extensions if not _same_size(e.source, e.target)]
    if stale:
        try:
            stale[0].target.parent.mkdir(parents=True, exist_ok=True)
            _install(stale, stale[0].target.parent)
        except OSError as error:
            raise ExtensionWheelError(
                f"srdp: cannot fill the extension directory {directory}: {error}; set SRDP_EXTENSION_DIR "
                "to a writable folder"
            ) from error
    _done.add(directory)


def _same_size(source: Path, target: Path) -> bool:
    try:
        return target.stat().st_size == source.stat().st_size
    except OSError:
        return False


def _install(extensions: list[WheelExtension], platform_dir: Path) -> None:
    """INSTALLs the wheel files into a private staging directory, then moves them in."""
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=platform_dir.parent.parent))
    try:
        con = duckdb.connect(
            ":memory:",
            config={
                "extension_directory": str(staging),
                "allow_unsigned_extensions": "true",
                "autoinstall_known_extensions": "false",
                "autoload_known_extensions": "false",
            },
        )
        try:
            for e in extensions:
                con.execute(f"INSTALL '{str(e.source).replace(chr(39), chr(39) * 2)}'")
        except duckdb.Error as error:
            raise ExtensionWheelError(f"srdp: installing the extension wheels into {platform_dir} failed: {error}") from error
        finally:
            con.close()
        staged = staging / platform_dir.parent.name / platform_dir.name
        for e in extensions:
            for suffix in ("", ".info"):
                built = staged / f"{e.name}.duckdb_extension{suffix}"
                if built.is_file():
                    os.replace(built, platform_dir / built.name)
            if not e.target.is_file():
                raise ExtensionWheelError(f"srdp: INSTALL '{e.source}' did not create {e.target}")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
