#!/usr/bin/env python3
"""Install the DuckDB extensions shipped as PyPI wheels into a local directory.

Usage::

    .venv/bin/python scripts/install_extensions.py [EXTENSION_DIRECTORY]

EXTENSION_DIRECTORY defaults to ``<repo>/.duckdb/extensions``.

The ``duckdb-extension-<name>`` wheels only drop a file at
``site-packages/duckdb_extension_<name>/extensions/v<duckdb>/<name>.duckdb_extension``.
This script runs ``INSTALL '<that path>'`` for ducklake, sqlite, postgres and
httpfs, which copies each file into
``EXTENSION_DIRECTORY/v<duckdb>/<platform>/<canonical>.duckdb_extension``
(sqlite -> sqlite_scanner, postgres -> postgres_scanner).  Afterwards DuckDB
can (auto)load them with no network access.

* Idempotent: an extension whose installed file already exists with the same
  size as the wheel's file is skipped ("already installed").
* A missing wheel file is a hard error (exit status 1).
* At the end, a fresh connection with autoinstall disabled runs
  ``LOAD ducklake; LOAD sqlite_scanner; LOAD postgres_scanner; LOAD httpfs``
  to prove that nothing needs to be downloaded.
"""

from __future__ import annotations

import os
import sys

import duckdb

_HERE = os.path.dirname(os.path.abspath(__file__))

REPO_ROOT = os.path.dirname(_HERE)
DEFAULT_DIR = os.path.join(REPO_ROOT, ".duckdb", "extensions")

# wheel name -> name DuckDB installs/loads it under
EXTENSIONS = {
    "ducklake": "ducklake",
    "sqlite": "sqlite_scanner",
    "postgres": "postgres_scanner",
    "httpfs": "httpfs",
}


def connect(extension_directory: str) -> duckdb.DuckDBPyConnection:
    """An in-memory connection that may never download an extension."""
    return duckdb.connect(":memory:", config={
        "extension_directory": extension_directory,
        "allow_unsigned_extensions": "true",
        "autoinstall_known_extensions": "false",
        "autoload_known_extensions": "true",
    })


def wheel_file(wheel_name: str, version: str) -> str:
    """Path of the extension file dropped by ``duckdb-extension-<wheel_name>``."""
    site_packages = os.path.dirname(os.path.dirname(os.path.abspath(duckdb.__file__)))
    return os.path.join(site_packages, f"duckdb_extension_{wheel_name}",
                        "extensions", version, f"{wheel_name}.duckdb_extension")


def main(argv: list[str]) -> int:
    ext_dir = os.path.abspath(argv[1]) if len(argv) > 1 else DEFAULT_DIR
    os.makedirs(ext_dir, exist_ok=True)
    con = connect(ext_dir)
    version = con.execute("SELECT library_version FROM pragma_version()").fetchone()[0]
    platform = con.execute("PRAGMA platform").fetchone()[0]
    target_dir = os.path.join(ext_dir, version, platform)

    missing = [w for w in EXTENSIONS if not os.path.isfile(wheel_file(w, version))]
    if missing:
        for w in missing:
            print(f"error: {wheel_file(w, version)} does not exist; "
                  f"pip install duckdb-extension-{w}=={version.lstrip('v')} "
                  f"into this venv ({sys.prefix})", file=sys.stderr)
        return 1

    for wheel_name, name in EXTENSIONS.items():
        src = wheel_file(wheel_name, version)
        dst = os.path.join(target_dir, f"{name}.duckdb_extension")
        if os.path.isfile(dst) and os.path.getsize(dst) == os.path.getsize(src):
            print(f"{name}: already installed ({dst})")
            continue
        con.execute(f"INSTALL '{src}'")
        if not os.path.isfile(dst):
            print(f"error: INSTALL '{src}' did not create {dst}", file=sys.stderr)
            return 1
        print(f"{name}: installed ({dst})")
    con.close()

    check = connect(ext_dir)
    try:
        for name in EXTENSIONS.values():
            check.execute(f"LOAD {name}")
    except duckdb.Error as e:
        print(f"error: loading {name} from {ext_dir} failed: {e}", file=sys.stderr)
        return 1
    finally:
        check.close()
    print(f"ok: {', '.join(EXTENSIONS.values())} load from {ext_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
