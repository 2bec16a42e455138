#!/usr/bin/env python3
"""Build srdp's distribution from the built extension, offline: a platform wheel and a DuckDB
extension repository.

Usage (``make dist`` runs it after ``make release``)::

    .venv/bin/python scripts/dist.py [--extension build/release/srdp.duckdb_extension]
                                     [--wheel-dir build/dist] [--repository build/repository]
                                     [--repository-only]

* The wheel ``<wheel-dir>/srdp-<version>-py3-none-<platform>.whl``: the Python package (srdp,
  srdp.dagster, srdp.ingest, srdp.dbt), the extension as ``srdp/extension/srdp.duckdb_extension``
  and the dbt package (``dbt/``: dbt_project.yml, README.md, macros) as ``srdp/dbt_package``.
  Built by setuptools (python/pyproject.toml, python/setup.py) from a staging copy of
  ``python/`` under ``<wheel-dir>``, with this venv's setuptools and no package index, so the
  checkout's ``python/`` gets no build files.
* The repository ``<repository>/<duckdb version>/<platform>/srdp.duckdb_extension`` and its
  ``.gz`` (DuckDB prefers the ``.gz``), for ``INSTALL srdp FROM '<repository>'`` with a
  ``file://`` path, or the same folder served over HTTP or copied to an S3 prefix. Next to it,
  the extensions srdp's catalogs need, for the same DuckDB version and platform:
  ``ducklake``, ``sqlite_scanner``, ``postgres_scanner`` and ``httpfs``, copied (with a ``.gz``)
  from this venv's ``duckdb-extension-*`` wheels under their DuckDB names
  (:mod:`srdp.extension_wheels`). So a DuckDB CLI with ``SET custom_extension_repository`` and
  ``SET autoinstall_extension_repository`` on this folder installs srdp and autoinstalls
  everything a lake needs from it, offline, in a fresh ``HOME``.

The extension is loaded once first (``srdp_version()``), and the repository is then checked by
installing and loading every extension from it into a temporary extension directory, so a file
that does not load into this DuckDB is never shipped. Prints the paths and sizes.
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import subprocess
import sys
import tempfile
import zipfile
from importlib import metadata
from pathlib import Path

import duckdb

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from srdp import extension_wheels  # noqa: E402
EXTENSION = "srdp.duckdb_extension"
# What of dbt/ a dbt project needs (its packages.yml: `- local: <python -m srdp dbt-package-path>`).
DBT_PACKAGE = ["dbt_project.yml", "README.md", "macros/*.sql"]


class DistError(Exception):
    """A distribution cannot be built; printed as ``dist: <message>``."""


def probe(extension: Path) -> tuple[str, str, str]:
    """(extension version, DuckDB version, platform) of ``extension`` loaded into this DuckDB."""
    con = duckdb.connect(":memory:", config={"allow_unsigned_extensions": "true", "autoinstall_known_extensions": "false"})
    try:
        con.execute(f"LOAD '{str(extension).replace(chr(39), chr(39) * 2)}'")
        ext_version, duckdb_version = con.execute("SELECT extension_version, duckdb_version FROM srdp_version()").fetchone()
        (platform,) = con.execute("PRAGMA platform").fetchone()
    except duckdb.Error as error:
        raise DistError(f"{extension} does not load into DuckDB {duckdb.__version__}: {error}") from error
    finally:
        con.close()
    return str(ext_version), str(duckdb_version), str(platform)


def build_repository(extension: Path, repository: Path, duckdb_version: str, platform: str) -> list[Path]:
    """``<repository>/<duckdb_version>/<platform>/srdp.duckdb_extension`` and its ``.gz``."""
    target = repository / duckdb_version / platform
    target.mkdir(parents=True, exist_ok=True)
    plain, packed = target / EXTENSION, target / f"{EXTENSION}.gz"
    shutil.copyfile(extension, plain)
    data = extension.read_bytes()
    with open(packed, "wb") as raw, gzip.GzipFile(filename=EXTENSION, mode="wb", fileobj=raw, mtime=0) as gz:
        gz.write(data)
    return [plain, packed]


def add_dependencies(repository: Path, duckdb_version: str, platform: str) -> list[Path]:
    """ducklake, sqlite_scanner, postgres_scanner and httpfs from this venv's extension wheels,
    as ``<repository>/<duckdb_version>/<platform>/<name>.duckdb_extension`` and its ``.gz``."""
    files = []
    for e in extension_wheels.wheel_extensions(repository, duckdb_version, platform):
        if not e.source.is_file():
            raise DistError(
                f"{e.source} is missing: {sys.executable} -m pip install "
                f"duckdb-extension-{e.wheel}=={duckdb_version.lstrip('v')}"
            )
        e.target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(e.source, e.target)
        packed = e.target.with_name(e.target.name + ".gz")
        with open(packed, "wb") as raw, gzip.GzipFile(filename=e.target.name, mode="wb", fileobj=raw, mtime=0,
                                                      compresslevel=1) as gz:  # level 1: 4x faster, 12% larger
            gz.write(e.source.read_bytes())
        files += [e.target, packed]
    return files


def check_repository(repository: Path) -> None:
    """Installs every extension of ``repository`` by name into a temporary extension directory
    (downloads impossible: both repository settings point at it) and loads each one."""
    names = ["srdp", *extension_wheels.EXTENSIONS.values()]
    with tempfile.TemporaryDirectory(prefix="srdp-dist-check-") as directory:
        url = f"file://{repository}"
        con = duckdb.connect(":memory:", config={
            "allow_unsigned_extensions": "true", "extension_directory": directory,
            "custom_extension_repository": url, "autoinstall_extension_repository": url,
            "autoinstall_known_extensions": "false",
        })
        try:
            for name in names:
                con.execute(f"INSTALL {name}")
                con.execute(f"LOAD {name}")
        except duckdb.Error as error:
            raise DistError(f"{repository}: {name} does not install and load from it: {error}") from error
        finally:
            con.close()


def stage(extension: Path, staging: Path) -> None:
    """A copy of ``python/`` with the extension and the dbt package inside the srdp package."""
    if staging.exists():
        shutil.rmtree(staging)
    source = REPO / "python"
    staging.mkdir(parents=True)
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in"):
        shutil.copy2(source / name, staging / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.py[cod]", "*.egg-info", "extension", "dbt_package")
    shutil.copytree(source / "srdp", staging / "srdp", ignore=ignore)
    (staging / "srdp" / "extension").mkdir()
    shutil.copyfile(extension, staging / "srdp" / "extension" / EXTENSION)
    package = staging / "srdp" / "dbt_package"
    for pattern in DBT_PACKAGE:
        files = sorted((REPO / "dbt").glob(pattern))
        if not files:
            raise DistError(f"dbt package: no file matches dbt/{pattern}")
        for file in files:
            dest = package / file.relative_to(REPO / "dbt")
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(file, dest)


def check_setuptools() -> None:
    """The venv's setuptools builds the wheel (no build isolation: nothing is downloaded)."""
    try:
        version = metadata.version("setuptools")
    except metadata.PackageNotFoundError:
        version = None
    if version is None or tuple(int(p) for p in version.split(".")[:2] if p.isdigit()) < (70, 1):
        raise DistError(
            f"setuptools>=70.1 is needed in {sys.prefix} to build the wheel offline (found: {version}); "
            f"{sys.executable} -m pip install 'setuptools>=70.1'"
        )


def build_wheel(extension: Path, wheel_dir: Path) -> Path:
    """The platform wheel, built from a staging copy of ``python/`` and checked for its extras."""
    check_setuptools()
    staging = wheel_dir / ".staging"
    stage(extension, staging)
    wheel_dir.mkdir(parents=True, exist_ok=True)
    for old in wheel_dir.glob("srdp-*.whl"):
        old.unlink()
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
         "--wheel-dir", str(wheel_dir), str(staging)],
        capture_output=True, text=True,
    )
    shutil.rmtree(staging, ignore_errors=True)
    if done.returncode != 0:
        raise DistError(f"pip wheel failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    (wheel,) = wheel_dir.glob("srdp-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        if archive.read(f"srdp/extension/{EXTENSION}") != extension.read_bytes():
            raise DistError(f"{wheel}: srdp/extension/{EXTENSION} differs from {extension}")
    for needed in ("srdp/__init__.py", "srdp/dagster/__init__.py", "srdp/ingest/__init__.py",
                   "srdp/dbt_package/dbt_project.yml", "srdp/dbt_package/macros/srdp_functions.sql"):
        if needed not in names:
            raise DistError(f"{wheel}: {needed} is missing")
    return wheel


def main(argv: list[str] | None = None) -> int:
    args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args.add_argument("--extension", type=Path, default=REPO / "build" / "release" / EXTENSION)
    args.add_argument("--wheel-dir", type=Path, default=REPO / "build" / "dist")
    args.add_argument("--repository", type=Path, default=REPO / "build" / "repository")
    args.add_argument("--repository-only", action="store_true", help="build the extension repository, not the wheel")
    opts = args.parse_args(argv)
    extension = opts.extension.resolve()
    try:
        if not extension.is_file():
            raise DistError(f"no extension at {extension}; run `make release` first")
        ext_version, duckdb_version, platform = probe(extension)
        repository = opts.repository.resolve()
        files = build_repository(extension, repository, duckdb_version, platform)
        files += add_dependencies(repository, duckdb_version, platform)
        check_repository(repository)
        wheel = None if opts.repository_only else build_wheel(extension, opts.wheel_dir.resolve())
    except DistError as error:
        print(f"dist: {error}", file=sys.stderr)
        return 1
    print(f"srdp {ext_version} for DuckDB {duckdb_version} on {platform}")
    for path in [wheel, *files] if wheel else files:
        print(f"{path}  {path.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
