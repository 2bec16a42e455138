#!/usr/bin/env python3
"""Install the DuckDB extensions shipped as PyPI wheels into a local directory.

Usage::

    .venv/bin/python scripts/install_extensions.py [EXTENSION_DIRECTORY]

EXTENSION_DIRECTORY defaults to ``<repo>/.duckdb/extensions``.

A thin command line over :func:`srdp.extension_wheels.ensure_installed` (imported from this
checkout's ``python/``), which copies the files of the ``duckdb-extension-{ducklake,sqlite,
postgres,httpfs}`` wheels into ``EXTENSION_DIRECTORY/v<duckdb>/<platform>/`` with DuckDB's own
``INSTALL '<file>'``, so that DuckDB can (auto)load them with no network access.

* Idempotent: an extension whose installed file already has the size of the wheel's file is
  left alone ("already installed").
* A missing wheel file, or a failed install, is a hard error (exit status 1).
* At the end, a fresh connection with autoinstall disabled runs
  ``LOAD ducklake; LOAD sqlite_scanner; LOAD postgres_scanner; LOAD httpfs``
  to prove that nothing needs to be downloaded (``make python-env`` relies on this).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

_HERE = os.path.dirname(os.path.abspath(__file__))

REPO_ROOT = os.path.dirname(_HERE)
DEFAULT_DIR = os.path.join(REPO_ROOT, ".duckdb", "extensions")

sys.path.insert(0, os.path.join(REPO_ROOT, "python"))

import duckdb  # noqa: E402

from srdp import extension_wheels  # noqa: E402


def connect(extension_directory: Path) -> duckdb.DuckDBPyConnection:
    """An in-memory connection that may never download an extension."""
    return duckdb.connect(":memory:", config={
        "extension_directory": str(extension_directory),
        "allow_unsigned_extensions": "true",
        "autoinstall_known_extensions": "false",
        "autoload_known_extensions": "true",
    })


def _stat(path: Path) -> tuple[int, int, int] | None:
    """(inode, size, mtime) of ``path``, None when absent: tells whether a file was replaced."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def main(argv: list[str]) -> int:
    ext_dir = Path(os.path.abspath(argv[1] if len(argv) > 1 else DEFAULT_DIR))
    extensions = extension_wheels.wheel_extensions(ext_dir)
    before = {e.name: _stat(e.target) for e in extensions}
    try:
        extension_wheels.ensure_installed(ext_dir)
    except extension_wheels.ExtensionWheelError as error:
        print(f"error: {error} (into this venv: {sys.prefix})", file=sys.stderr)
        return 1
    for e in extensions:
        state = "already installed" if _stat(e.target) == before[e.name] else "installed"
        print(f"{e.name}: {state} ({e.target})")

    check = connect(ext_dir)
    try:
        for e in extensions:
            check.execute(f"LOAD {e.name}")
    except duckdb.Error as error:
        print(f"error: loading {e.name} from {ext_dir} failed: {error}", file=sys.stderr)
        return 1
    finally:
        check.close()
    print(f"ok: {', '.join(e.name for e in extensions)} load from {ext_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
