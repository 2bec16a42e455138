"""srdp as a consumer gets it: the platform wheel and the extension repository (scripts/dist.py,
``make dist``), installed into a fresh virtual environment outside the checkout.

One module fixture builds the wheel and the repository from the extension under test (no cargo
build), creates a venv in a temporary folder and runs one ``pip install <wheel>[dagster,dbt,cli,ingest]``
(the local wheel plus the package index). Every consumer command then runs with that venv's
executables, from a temporary working folder, with a temporary ``HOME`` and no ``SRDP_*``
variable, so nothing can be found through the checkout: the venv's srdp must load the extension
its wheel ships and fill its own extension directory (``$HOME/.cache/srdp/...``) from the
extension wheels.

Lakes are checked from this test process (the checkout's srdp, as a reader) with counts read from
the metadata tables (lakecheck) and checksums computed by plain DuckDB from how the rows were made.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import textwrap
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pytest
import yaml

import srdp
from conftest import PY, REPO, write_config
from lakecheck import Lake

EXTENSION = Path(os.environ.get("SRDP_EXTENSION") or REPO / "build" / "release" / "srdp.duckdb_extension")
PLATFORM_TAG = "linux_x86_64"
DUCKDB_PLATFORM = "linux_amd64"

LAKE_TOML = """
[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/"
data_inlining_row_limit = 10

[catalogs.lake.schemas.curated]
writer = "dbt"
layer = "curated"
"""

# Run in the consumer venv: builds main.events in three Parquet batches of 20 rows and four
# inlined batches of 5 (limit 10), then, with "compact", calls srdp_compact and prints the JSON of
# what it saw. Row i is (i, 'v' || i), so the checksum can be computed without the lake.
LAKE_SCRIPT = """
import json, sys
import srdp
from srdp import install

def build(con):
    con.execute("CREATE TABLE lake.main.events (id BIGINT, v VARCHAR)")
    n = 0
    for size in (20, 20, 20, 5, 5, 5, 5):
        con.execute(f"INSERT INTO lake.main.events SELECT {n} + range, 'v' || ({n} + range) FROM range({size})")
        n += size

def rows(con):
    return list(con.execute("SELECT count(*), sum(hash(id, v))::VARCHAR FROM lake.main.events").fetchone())

con = srdp.connect(config="srdp.toml")
srdp.call(con, "srdp_attach_catalog", "lake", role="writer")
build(con)
out = {"extension": [str(install.find_extension().path), install.find_extension().source],
       "directory": [str(p) for p in install.extension_directory_source()],
       "prefix": sys.prefix, "srdp": srdp.__file__, "before": rows(con)}
if sys.argv[1:] == ["compact"]:
    out["compact"] = [{k: v for k, v in r.items() if k != "duration_ms"} for r in srdp.call(con, "srdp_compact", "lake")]
    out["after"] = rows(con)
con.close()
print(json.dumps(out))
"""

EVENTS = 80  # 3 x 20 + 4 x 5 rows

# doctor's extras line in the consumer venv (pip install <wheel>[dagster,dbt,cli,ingest]).
CONSUMER_EXTRAS = (
    "ok   extras: importable: dagster, dbt, dlt, ingest; not importable: pandas (pip install 'srdp[pandas]'), "
    "polars (pip install 'srdp[polars]')"
)

# A lake whose landing zone is on S3 (the test servers' bucket; {landing} is its prefix).
LANDING_TOML = """
[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/"
landing_path = "{landing}"
promote_into = "raw_landed"

[catalogs.lake.schemas.raw_landed]
writer = "io_manager"
layer = "raw"
"""

# Run in the consumer venv: dlt lands five orders in the landing zone on S3 and srdp promotes the
# load into lake.raw_landed through the IO manager; prints what happened.
LANDING_SCRIPT = """
import json, sys
import dlt
from dlt.common.configuration.specs import AwsCredentials
import srdp.ingest.dlt as srdp_dlt
from srdp.dagster import SrdpIOManager
from srdp.ingest import promote_landing

key, secret, region, endpoint = sys.argv[1:5]
creds = AwsCredentials(aws_access_key_id=key, aws_secret_access_key=secret, region_name=region, endpoint_url=endpoint)
dest = srdp_dlt.destination("lake", config="srdp.toml", layer="landing", storage_credentials=creds)
pipeline = dest.pipeline("shop", pipelines_dir="pipelines")
info = dest.run(pipeline, dlt.resource([{"id": i, "amount": i * 10} for i in range(1, 6)], name="orders"))
outcomes = promote_landing(dest, "orders", [], io_manager=SrdpIOManager(config="srdp.toml"), keys={"orders": ["id"]})
print(json.dumps({"loads": list(info.loads_ids), "outcomes": [[o.load_id, o.status, o.rows] for o in outcomes]}))
"""


@dataclass
class Consumer:
    root: Path
    venv: Path
    wheel: Path
    repository: Path
    extension_version: str
    home: Path
    pip_started: float
    pip_seconds: float

    @property
    def bin(self) -> Path:
        return self.venv / "bin"

    @property
    def site_packages(self) -> Path:
        (found,) = (self.venv / "lib").glob("python3*/site-packages")
        return found

    def env(self) -> dict[str, str]:
        """The environment of a consumer: no SRDP_*, its own HOME, the venv first on PATH."""
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("SRDP_") and k not in ("VIRTUAL_ENV", "PYTHONPATH", "XDG_CACHE_HOME", "DAGSTER_HOME")}
        env.update(HOME=str(self.home), PATH=f"{self.bin}{os.pathsep}{env.get('PATH', '')}", DO_NOT_TRACK="1",
                   DBT_SEND_ANONYMOUS_USAGE_STATS="false", RUNTIME__DLTHUB_TELEMETRY="false")
        return env

    def run(self, args: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, cwd=cwd, env=self.env(), capture_output=True, text=True, timeout=timeout)

    def workdir(self, name: str, config: str = LAKE_TOML) -> Path:
        work = self.root / "work" / name
        write_config(work, config)
        return work

    def cache(self) -> Path:
        return self.home / ".cache" / "srdp" / "duckdb_extensions"


def check(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, f"{done.args} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def consumer(tmp_path_factory: pytest.TempPathFactory) -> Consumer:
    root = tmp_path_factory.mktemp("dist")
    assert REPO not in root.parents
    built = check(subprocess.run(
        [PY, str(REPO / "scripts" / "dist.py"), "--extension", str(EXTENSION),
         "--wheel-dir", str(root / "dist"), "--repository", str(root / "repository")],
        capture_output=True, text=True, timeout=300,
    ))
    extension_version = built.splitlines()[0].split()[1]
    (wheel,) = (root / "dist").glob("*.whl")
    venv = root / "venv"
    check(subprocess.run([sys.base_prefix + "/bin/python3", "-m", "venv", str(venv)], capture_output=True, text=True, timeout=120))
    home = root / "home"
    home.mkdir()
    pip_env = {k: v for k, v in os.environ.items() if not k.startswith("SRDP_") and k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    started = time.monotonic()
    check(subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         f"{wheel}[dagster,dbt,cli,ingest]"],
        env=pip_env, capture_output=True, text=True, timeout=900,
    ))
    pip_seconds = time.monotonic() - started
    print(f"\nwheel {wheel.name}: {wheel.stat().st_size} bytes; pip install: {pip_seconds:.1f} s")
    return Consumer(root, venv, wheel, root / "repository", extension_version, home, started, pip_seconds)


def assert_compacted(config: Path) -> None:
    """lake.main.events, read independently: one live file, nothing inlined, the rows it was
    loaded with."""
    con = reader(config)
    try:
        assert Lake(con).state() == {("main", "events"): (1, 0)}
        assert list(con.execute("SELECT count(*), sum(hash(id, v))::VARCHAR FROM lake.main.events").fetchone()) == expected_rows(EVENTS)
    finally:
        con.close()


def reader(cfg: Path) -> duckdb.DuckDBPyConnection:
    """The lake of ``cfg`` attached as reader by the checkout's srdp (this test process)."""
    con = srdp.connect(config=cfg)
    srdp.call(con, "srdp_attach_catalog", "lake")
    return con


def expected_rows(n: int) -> list:
    """(count, checksum) of rows (i, 'v' || i) for i < n, computed without the lake."""
    con = duckdb.connect()
    try:
        return list(con.execute(f"SELECT count(*), sum(hash(range, 'v' || range))::VARCHAR FROM range({n})").fetchone())
    finally:
        con.close()


def listing(root: Path) -> dict[str, int]:
    """Files under ``root`` (Python's bytecode caches aside) -> size."""
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


def test_the_wheel_holds_the_package_the_extension_and_the_dbt_package(consumer: Consumer) -> None:
    assert consumer.wheel.name == f"srdp-0.1.0-py3-none-{PLATFORM_TAG}.whl"
    with zipfile.ZipFile(consumer.wheel) as wheel:
        names = set(wheel.namelist())
        assert wheel.read("srdp/extension/srdp.duckdb_extension") == EXTENSION.read_bytes()
        metadata = wheel.read("srdp-0.1.0.dist-info/METADATA").decode()
        tags = wheel.read("srdp-0.1.0.dist-info/WHEEL").decode()
    assert f"Tag: py3-none-{PLATFORM_TAG}" in tags.splitlines()
    assert "Root-Is-Purelib: false" in tags.splitlines()
    requires = [line.split(": ", 1)[1] for line in metadata.splitlines() if line.startswith("Requires-Dist: ")]
    assert [r for r in requires if "extra ==" not in r] == [
        "duckdb==1.5.5", "duckdb-extension-ducklake==1.5.5", "duckdb-extension-sqlite==1.5.5",
        "duckdb-extension-postgres==1.5.5", "duckdb-extension-httpfs==1.5.5",
    ]
    macros = sorted(p.name for p in (REPO / "dbt" / "macros").glob("*.sql"))
    assert sorted(n.rsplit("/", 1)[1] for n in names if n.startswith("srdp/dbt_package/macros/")) == macros
    for module in ("srdp/__init__.py", "srdp/install.py", "srdp/dagster/maintenance.py", "srdp/ingest/dlt/__init__.py",
                   "srdp/dbt/plugin.py", "srdp/dbt_package/dbt_project.yml"):
        assert module in names
    # The repository: the same file, plain and gzipped, where DuckDB's INSTALL ... FROM looks, and
    # the extensions a lake needs, from the extension wheels (test_docs_code_blocks.py installs
    # them from it in a fresh HOME).
    folder = consumer.repository / "v1.5.5" / DUCKDB_PLATFORM
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        f"{name}.duckdb_extension{suffix}" for name in ("srdp", "ducklake", "sqlite_scanner", "postgres_scanner", "httpfs")
        for suffix in ("", ".gz")
    )
    assert (folder / "srdp.duckdb_extension").read_bytes() == EXTENSION.read_bytes()
    assert gzip.decompress((folder / "srdp.duckdb_extension.gz").read_bytes()) == EXTENSION.read_bytes()


def test_installed_srdp_compacts_a_new_sqlite_lake_with_its_own_extension(consumer: Consumer) -> None:
    work = consumer.workdir("compact")
    (work / "lake.py").write_text(LAKE_SCRIPT)
    site_before = listing(consumer.site_packages)
    out = json.loads(check(consumer.run([str(consumer.bin / "python"), "lake.py", "compact"], cwd=work)))
    first_compaction = time.monotonic() - consumer.pip_started
    print(f"\npip install to first compaction: {first_compaction:.1f} s (pip install {consumer.pip_seconds:.1f} s)")

    site = consumer.site_packages
    assert out["prefix"] == str(consumer.venv)
    assert out["srdp"] == str(site / "srdp" / "__init__.py")
    assert out["extension"] == [str(site / "srdp" / "extension" / "srdp.duckdb_extension"), "wheel"]
    (directory,) = consumer.cache().iterdir()
    assert directory.name.startswith("venv-")
    assert out["directory"] == [str(directory), "cache"]
    assert sorted(p.name for p in (directory / "v1.5.5" / DUCKDB_PLATFORM).glob("*.duckdb_extension")) == [
        "ducklake.duckdb_extension", "httpfs.duckdb_extension", "postgres_scanner.duckdb_extension",
        "sqlite_scanner.duckdb_extension",
    ]
    # Nothing was written into site-packages, nor into DuckDB's default extension directory.
    assert listing(site) == site_before
    assert not (consumer.home / ".duckdb").exists()

    assert out["before"] == out["after"] == expected_rows(EVENTS)
    assert out["compact"] == [{
        "catalog": "lake", "schema_name": "main", "table_name": "events", "rows_flushed": 20,
        "files_before": 3, "files_after": 1, "files_processed": 4, "files_created": 1, "files_rewritten": 0,
        "deletes_applied": 0, "attempts": 1, "status": "compacted",
    }]
    assert_compacted(work / "srdp.toml")


def test_dagster_job_execute_runs_the_maintenance_job_from_the_venv(consumer: Consumer) -> None:
    work = consumer.workdir("dagster")
    (work / "lake.py").write_text(LAKE_SCRIPT)
    check(consumer.run([str(consumer.bin / "python"), "lake.py"], cwd=work))
    con = reader(work / "srdp.toml")
    try:
        assert Lake(con).state() == {("main", "events"): (3, 20)}
    finally:
        con.close()
    (work / "definitions.py").write_text(textwrap.dedent("""
        from srdp.dagster import srdp_definitions

        defs = srdp_definitions("srdp.toml")
    """))
    (work / "dagster_home").mkdir()
    env_home = {"DAGSTER_HOME": str(work / "dagster_home")}
    done = subprocess.run(
        [str(consumer.bin / "dagster"), "job", "execute", "-f", "definitions.py", "-j", "srdp_dataset_maintenance"],
        cwd=work, env={**consumer.env(), **env_home}, capture_output=True, text=True, timeout=300,
    )
    check(done)
    assert "RUN_SUCCESS" in done.stdout + done.stderr
    assert_compacted(work / "srdp.toml")


def dbt_project_from_header(profile_text: str, project: str) -> str:
    """The dbt_project.yml snippet of the profile's header comment, for project ``project``."""
    lines = profile_text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("# dbt_project.yml of a project"))
    snippet = [line[4:] for line in lines[start + 1:] if line.startswith("#   ")]
    return f"name: {project}\nversion: '1.0.0'\nconfig-version: 2\n" + "\n".join(snippet).replace("<project>", project) + "\n"


def test_dbt_runs_a_model_into_the_lake_with_the_packaged_macros(consumer: Consumer) -> None:
    work = consumer.workdir("dbt")
    python = str(consumer.bin / "python")
    package = Path(check(consumer.run([python, "-m", "srdp", "dbt-package-path"], cwd=work)).strip())
    assert package == consumer.site_packages / "srdp" / "dbt_package"
    profile = check(consumer.run([python, "-m", "srdp", "dbt-profile", "--config", "srdp.toml", "--profile", "shop"], cwd=work))
    plugin = yaml.safe_load(profile)["shop"]["outputs"]["dev"]["plugins"][0]["config"]
    assert plugin == {"extension": str(consumer.site_packages / "srdp" / "extension" / "srdp.duckdb_extension"),
                      "catalog": "lake"}
    (work / "profiles").mkdir()
    (work / "profiles" / "profiles.yml").write_text(profile)
    project = work / "project"
    (project / "models").mkdir(parents=True)
    (project / "dbt_project.yml").write_text(dbt_project_from_header(profile, "shop"))
    (project / "packages.yml").write_text(f"packages:\n  - local: {package}\n")
    (project / "models" / "orders.sql").write_text(
        "{{ config(materialized='table') }}\nSELECT range AS id, 'v' || range AS v FROM range(12)\n"
    )
    dbt = [str(consumer.bin / "dbt")]
    profiles = ["--profiles-dir", str(work / "profiles")]
    package_before = listing(package)
    check(consumer.run([*dbt, "deps", *profiles], cwd=project))
    assert (project / "dbt_packages" / "srdp").resolve() == package
    run = check(consumer.run([*dbt, "run", *profiles], cwd=project))
    # The packaged plugin attached the lake (dbt's target database) through srdp as writer.
    assert "srdp_attach_catalog: catalog=lake | alias=lake | role=writer | read_only=false" in run
    con = reader(work / "srdp.toml")
    try:
        rows = con.execute("SELECT count(*), sum(hash(id, v))::VARCHAR FROM lake.curated.orders").fetchone()
        assert list(rows) == expected_rows(12)
    finally:
        con.close()
    # dbt linked the package and wrote nothing into it (it is inside site-packages).
    assert listing(package) == package_before


def test_a_landing_zone_on_s3_loads_and_promotes_with_the_ingest_extra(consumer: Consumer, servers: object) -> None:
    # `pip install srdp[ingest]` brings s3fs: dlt's filesystem destination on S3 needs it (without
    # it the load fails with "Install s3fs to access S3").
    import urllib.error

    from pg_lake import BUCKET
    from servers import create_bucket

    try:
        create_bucket(servers, BUCKET)
    except urllib.error.HTTPError as error:
        if error.code != 409:  # an earlier test created it
            raise
    work = consumer.workdir("landing_s3", LANDING_TOML.format(landing=f"s3://{BUCKET}/dist-{consumer.root.name}/"))
    (work / "landing.py").write_text(LANDING_SCRIPT)
    s: Any = servers
    done = consumer.run([str(consumer.bin / "python"), "landing.py", s.s3_access_key, s.s3_secret_key, s.s3_region,
                         f"http://{s.s3_endpoint}"], cwd=work)
    out = json.loads(check(done).splitlines()[-1])
    (load,) = out["loads"]
    assert out["outcomes"] == [[load, "promoted", {"lake.raw_landed.orders": 5}]]
    con = reader(work / "srdp.toml")
    try:
        rows = con.execute("SELECT count(*), sum(hash(id, amount))::VARCHAR FROM lake.raw_landed.orders").fetchone()
    finally:
        con.close()
    plain = duckdb.connect()
    try:
        expected = plain.execute("SELECT count(*), sum(hash(range, range * 10))::VARCHAR FROM range(1, 6)").fetchone()
    finally:
        plain.close()
    assert rows == expected


def test_the_venvs_duckdb_cli_installs_srdp_from_the_repository_and_loads_it_by_name(consumer: Consumer) -> None:
    work = consumer.workdir("cli")
    directory = work / "duckdb_extensions"
    duckdb_cli = str(consumer.bin / "duckdb")
    setup = f"SET extension_directory = '{directory}'; "
    installed = consumer.run(
        [duckdb_cli, "-unsigned", "-csv", "-c",
         setup + f"INSTALL srdp FROM 'file://{consumer.repository}'; LOAD srdp; "
         "SELECT extension_version, duckdb_version FROM srdp_version();"],
        cwd=work,
    )
    assert check(installed).splitlines() == ["extension_version,duckdb_version", f"{consumer.extension_version},v1.5.5"]
    assert (directory / "v1.5.5" / DUCKDB_PLATFORM / "srdp.duckdb_extension").read_bytes() == EXTENSION.read_bytes()
    # A new CLI process loads it by name from the extension directory.
    loaded = consumer.run([duckdb_cli, "-unsigned", "-csv", "-c", setup + "LOAD srdp; SELECT extension_version FROM srdp_version();"], cwd=work)
    assert check(loaded).splitlines() == ["extension_version", consumer.extension_version]
    # Without -unsigned the unsigned build is refused: the documented flag is needed.
    refused = consumer.run([duckdb_cli, "-c", setup + "LOAD srdp;"], cwd=work)
    assert refused.returncode == 1
    assert "signature" in refused.stderr + refused.stdout


def test_extension_path_and_doctor_on_a_good_definition(consumer: Consumer) -> None:
    work = consumer.workdir("doctor_good")
    python = str(consumer.bin / "python")
    site = consumer.site_packages
    shipped = site / "srdp" / "extension" / "srdp.duckdb_extension"
    assert check(consumer.run([python, "-m", "srdp", "extension-path"], cwd=work)) == f"{shipped}\n"
    done = consumer.run([python, "-m", "srdp", "doctor", "--config", "srdp.toml", "--create"], cwd=work)
    (directory,) = consumer.cache().iterdir()
    assert check(consumer.run([python, "-m", "srdp", "extension-directory"], cwd=work)) == f"{directory}\n"
    version = sys.version.split()[0]
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [
        f"srdp 0.1.0 at {site / 'srdp'}; DuckDB 1.5.5; Python {version} at {consumer.venv}",
        f"ok   extension directory: {directory} (cache): ducklake, sqlite_scanner, postgres_scanner, httpfs",
        f"ok   extension: {shipped} (wheel), {consumer.extension_version}, loads into DuckDB v1.5.5",
        f"ok   config: {work / 'srdp.toml'}: 1 catalog: lake (sqlite)",
        "ok   catalog lake: attaches as writer (read-write), which created the lake",
        "ok   catalog lake: attaches as reader (read-only)",
        CONSUMER_EXTRAS,
        "all 6 checks passed",
    ]


def test_doctor_on_a_broken_definition_and_without_the_extension(consumer: Consumer) -> None:
    broken = LAKE_TOML.replace('data_path = "data/"', 'data_pth = "data/"')
    work = consumer.workdir("doctor_broken", broken)
    python = str(consumer.bin / "python")
    site = consumer.site_packages
    cfg = work / "srdp.toml"
    done = consumer.run([python, "-m", "srdp", "doctor", "--config", "srdp.toml"], cwd=work)
    assert (done.returncode, done.stderr) == (1, "srdp doctor: 1 of 4 checks failed\n")
    assert done.stdout.splitlines()[3] == (
        f"FAIL config: {cfg}: srdp_catalogs: {cfg}:3: key 'catalogs.lake.data_pth': unknown field `data_pth`, "
        "expected one of `metadata`, `metadata_schema`, `data_path`, `landing_path`, `promote_into`, `project`, "
        "`writer_secret`, `reader_secret`, `data_inlining_row_limit`, `pressure_warning_rows`, `max_attempts`, "
        "`max_retry_seconds`, `retry_backoff_ms`, `schemas`, `projects`"
    )
    assert done.stdout.splitlines()[4:] == [CONSUMER_EXTRAS]

    # A catalog whose lake does not exist: doctor says so and creates nothing (read-only).
    work = consumer.workdir("doctor_reader")
    done = consumer.run([python, "-m", "srdp", "doctor", "--config", "srdp.toml", "--role", "reader"], cwd=work)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines()[4:] == [
        "ok   catalog lake: not created yet (the writer's first attach creates it; --create creates it now)",
        CONSUMER_EXTRAS,
        "all 5 checks passed",
    ]
    assert not (work / "catalog").exists() and not (work / "data").exists()

    # An extension file that is not there: the error names it, and what to do.
    env = {"SRDP_EXTENSION": str(work / "missing.duckdb_extension")}
    done = subprocess.run([python, "-m", "srdp", "doctor", "--config", "srdp.toml"], cwd=work,
                          env={**consumer.env(), **env}, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (1, "srdp doctor: 1 of 3 checks failed\n")
    assert done.stdout.splitlines()[2] == (
        f"FAIL extension: srdp extension not found at {work / 'missing.duckdb_extension'} (from $SRDP_EXTENSION); "
        "fix or unset SRDP_EXTENSION"
    )
    missing = subprocess.run([python, "-m", "srdp", "extension-path"], cwd=work,
                             env={**consumer.env(), **env}, capture_output=True, text=True, timeout=120)
    assert (missing.returncode, missing.stdout, missing.stderr) == (1, "", (
        f"srdp extension-path: srdp extension not found at {work / 'missing.duckdb_extension'} (from $SRDP_EXTENSION); "
        "fix or unset SRDP_EXTENSION\n"
    ))


def test_doctor_uses_persistent_secrets_and_never_prints_their_password(consumer: Consumer) -> None:
    # A PostgreSQL catalog whose credentials live in a persistent DuckDB secret (the only kind a
    # new process sees); nothing listens on port 1, so both attaches fail after the secret is found.
    work = consumer.workdir("doctor_secret", """
        [catalogs.pg]
        metadata = "postgres:host=127.0.0.1 port=1 dbname=lake user=lake_user"
        data_path = "pgdata/"
        writer_secret = "pg_writer"
        reader_secret = "pg_reader"
    """)
    env = {**consumer.env(), "HOME": str(work / "home"), "XDG_CACHE_HOME": str(consumer.home / ".cache")}
    python = str(consumer.bin / "python")
    create = """
        import srdp
        con = srdp.connect()
        for name in ("pg_writer", "pg_reader"):
            con.execute(f"CREATE PERSISTENT SECRET {name} (TYPE postgres, HOST '127.0.0.1', PORT 1, "
                        "DATABASE 'lake', USER 'lake_user', PASSWORD 'hunter2-doctor-secret')")
    """
    check(subprocess.run([python, "-c", textwrap.dedent(create)], cwd=work, env=env, capture_output=True, text=True, timeout=120))
    assert sorted(p.name for p in (work / "home" / ".duckdb" / "stored_secrets").iterdir()) == [
        "pg_reader.duckdb_secret", "pg_writer.duckdb_secret",
    ]
    done = subprocess.run([python, "-m", "srdp", "doctor", "--config", "srdp.toml"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (1, "srdp doctor: 2 of 6 checks failed\n")
    assert "hunter2" not in done.stdout
    connection = "host=127.0.0.1 port=1 dbname=lake user=lake_user"
    refused = (
        f'IO Error: Failed to attach DuckLake MetaData "__ducklake_metadata_pg" at path + "postgres:{connection}"'
        f'Unable to connect to Postgres at "{connection}": connection to server at "127.0.0.1", port 1 failed: '
        "Connection refused\n\tIs the server running on that host and accepting TCP/IP connections?. the PostgreSQL "
        "server is not reachable: check host and port in the catalog's metadata and in its secret, and that the "
        "server runs; nothing was attached"
    )
    assert done.stdout.split("\n")[3:] == [
        "ok   config: " + str(work / "srdp.toml") + ": 1 catalog: pg (postgres)",
        # The reader's attach cannot tell whether the lake exists, and the writer's could create it.
        "FAIL catalog pg: attach as writer not checked: the reader's attach failed, so whether the lake exists is "
        "unknown and the writer's attach could create it; --create checks it anyway",
        *f"FAIL catalog pg: attach as reader failed: srdp_attach_catalog: attaching catalog 'pg' as 'pg' (reader) failed: {refused}".split("\n"),
        CONSUMER_EXTRAS,
        "",
    ]
    created = subprocess.run([python, "-m", "srdp", "doctor", "--config", "srdp.toml", "--create", "--role", "writer"],
                             cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert "hunter2" not in created.stdout
    assert created.stdout.split("\n")[4:] == [
        *f"FAIL catalog pg: attach as writer failed: srdp_attach_catalog: attaching catalog 'pg' as 'pg' (writer) failed: {refused}".split("\n"),
        CONSUMER_EXTRAS,
        "",
    ]
