"""Where srdp's pieces are: the extension file, DuckDB's extension directory, the dbt package.

srdp runs either from its platform wheel (``pip install srdp-<version>-py3-none-<platform>.whl``)
or from its source checkout (``pip install -e python/``, what ``make configure`` does).

The extension file, first found of:

1. ``$SRDP_EXTENSION``: an explicit choice wins, even over the file the wheel ships (a build to
   try, the tests' debug build). If it names no file, that is the answer, and loading it fails
   with that path: a wrong override is never replaced silently by another file.
2. ``srdp/extension/srdp.duckdb_extension``: the file the wheel ships.
3. ``<checkout>/build/release/srdp.duckdb_extension``: the checkout's release build.

DuckDB's extension directory (where ducklake, sqlite_scanner, postgres_scanner and httpfs are
autoloaded from; downloads stay off):

* ``$SRDP_EXTENSION_DIR``, when set;
* in a checkout, ``<checkout>/.duckdb/extensions`` (filled by ``make configure``, never by srdp);
* otherwise a per-user cache folder, ``$XDG_CACHE_HOME/srdp/duckdb_extensions/<environment>``
  (``~/.cache`` without ``XDG_CACHE_HOME``), one per Python environment (its ``sys.prefix``), so
  two virtual environments never share or overwrite each other's files.

Outside a checkout, :func:`extension_directory` fills the directory from the
``duckdb-extension-*`` wheels of this environment on first use (:mod:`srdp.extension_wheels`),
without network; nothing is ever written into site-packages.
"""

from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "EXTENSION_FILE",
    "ExtensionLocation",
    "checkout_root",
    "dbt_package_path",
    "duckdb_settings",
    "extension_directory",
    "extension_directory_source",
    "find_extension",
    "not_found_message",
    "user_extension_directory",
]

#: The file name of the extension, in the wheel, the checkout build and the repository.
EXTENSION_FILE = "srdp.duckdb_extension"

_PACKAGE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class ExtensionLocation:
    """The extension file srdp loads and why that one (``source``)."""

    path: Path
    source: str  # "$SRDP_EXTENSION", "wheel", "checkout", or "none" when nothing was found


def not_found_message(path: Path, environ: dict[str, str] | os._Environ[str] = os.environ) -> str:
    """Why the extension file ``path`` is missing and what to do, by where it was looked for."""
    if environ.get("SRDP_EXTENSION"):
        return f"srdp extension not found at {path} (from $SRDP_EXTENSION); fix or unset SRDP_EXTENSION"
    if checkout_root() is not None:
        return f"srdp extension not found at {path}; run `make release` or set SRDP_EXTENSION"
    return (
        f"srdp extension not found at {path}: this srdp installation ships no extension file; "
        "install srdp's platform wheel (srdp-<version>-py3-none-<platform>.whl) or set SRDP_EXTENSION"
    )


def checkout_root(package: Path = _PACKAGE) -> Path | None:
    """The srdp source checkout this package runs from, or None (an installed wheel)."""
    root = package.parents[1]
    if (root / "Cargo.toml").is_file() and (root / "python" / "srdp") == package:
        return root
    return None


def find_extension(
    environ: dict[str, str] | os._Environ[str] = os.environ,
    package: Path = _PACKAGE,
) -> ExtensionLocation:
    """The extension file to load: ``$SRDP_EXTENSION``, the wheel's file, the checkout build."""
    override = environ.get("SRDP_EXTENSION")
    if override:
        return ExtensionLocation(Path(override), "$SRDP_EXTENSION")
    shipped = package / "extension" / EXTENSION_FILE
    if shipped.is_file():
        return ExtensionLocation(shipped, "wheel")
    root = checkout_root(package)
    if root is not None:
        built = root / "build" / "release" / EXTENSION_FILE
        return ExtensionLocation(built, "checkout" if built.is_file() else "none")
    return ExtensionLocation(shipped, "none")


def user_extension_directory(
    environ: dict[str, str] | os._Environ[str] = os.environ,
    prefix: str = sys.prefix,
) -> Path:
    """The per-user cache folder of this Python environment (``prefix``)."""
    cache = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    resolved = os.path.realpath(prefix)
    key = hashlib.sha256(resolved.encode()).hexdigest()[:16]
    name = os.path.basename(resolved.rstrip(os.sep)).lstrip(".") or "env"
    return Path(cache) / "srdp" / "duckdb_extensions" / f"{name}-{key}"


def extension_directory_source(
    environ: dict[str, str] | os._Environ[str] = os.environ,
    package: Path = _PACKAGE,
    prefix: str = sys.prefix,
) -> tuple[Path, str]:
    """DuckDB's extension directory and where it comes from: ``$SRDP_EXTENSION_DIR``,
    ``checkout`` or ``cache`` (only ``checkout`` is never filled by srdp)."""
    given = environ.get("SRDP_EXTENSION_DIR")
    if given:
        return Path(given), "$SRDP_EXTENSION_DIR"
    root = checkout_root(package)
    if root is not None:
        return root / ".duckdb" / "extensions", "checkout"
    return user_extension_directory(environ, prefix), "cache"


def extension_directory() -> Path:
    """DuckDB's extension directory, filled from the extension wheels outside a checkout."""
    directory, _ = extension_directory_source()
    if checkout_root() is None:
        from srdp.extension_wheels import ensure_installed

        ensure_installed(directory)
    return directory


def duckdb_settings(directory: Path) -> dict[str, str]:
    """Connection options every srdp user needs: unsigned srdp, extensions from ``directory``,
    no downloads."""
    return {
        "allow_unsigned_extensions": "true",
        "extension_directory": str(directory),
        "autoinstall_known_extensions": "false",
        "autoload_known_extensions": "true",
    }


def dbt_package_path(package: Path = _PACKAGE) -> Path:
    """srdp's dbt package (``dbt_project.yml`` and ``macros/``), for ``packages.yml``'s
    ``- local: <path>``: the copy in the wheel, or the checkout's ``dbt/``."""
    shipped = package / "dbt_package"
    if (shipped / "dbt_project.yml").is_file():
        return shipped
    root = checkout_root(package)
    return root / "dbt" if root is not None else shipped
