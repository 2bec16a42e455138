"""The generated dbt profile: dbt runs from a folder outside the srdp checkout and writes nothing into it.

``python -m srdp dbt-profile`` renders the profile from srdp.toml. It is used with the real
``dbt`` executable from a project folder outside the checkout, against a copy of the checkout
(the srdp build, the extension directory with ducklake and sqlite_scanner, and the dbt package)
made read-only; its project's dbt_project.yml is the snippet the profile's own header documents.
Every file of that copy, and of the real checkout's ``.duckdb/extensions`` and ``dbt/``, is
listed (path, size, mtime) before and after: nothing may change and nothing may appear. (The
tests run as root, for whom ``chmod a-w`` stops nothing, so the listings are the evidence.) The
control shows what the listings catch: dbt-duckdb's ``extensions:`` entry, which runs
``conn.install_extension(path)``, copies the extension into the extension directory.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import duckdb
import pytest
import yaml

import srdp
from srdp.dbt.profile import DbtProfileError, render_profile

from conftest import PY, REPO, write_config

DBT = REPO / ".venv" / "bin" / "dbt"

SRDP_TOML = """
[catalogs.lake]
metadata = "sqlite:lake/catalog.sqlite"
data_path = "lake/data/"

[catalogs.lake.schemas.raw]
writer = "dlt"
layer = "raw"

[catalogs.lake.schemas.curated]
writer = "dbt"
layer = "curated"
"""

MODELS = {
    "orders.sql": "{{ config(materialized='table') }}\nselect range::INTEGER as id, range * 10 as amount from range({{ var('n', 3) }})\n",
    "orders_view.sql": "{{ config(materialized='view') }}\nselect id, amount + 1 as amount from {{ ref('orders') }}\n",
}

Listing = dict[str, tuple[int, int]]


def listing(root: Path) -> Listing:
    """Every file, directory and link under ``root``: relative path -> (size, mtime in ns)."""
    return {str(p.relative_to(root)): (p.lstat().st_size, p.lstat().st_mtime_ns) for p in sorted(root.rglob("*"))}


def make_checkout(target: Path) -> Path:
    """A copy of what dbt uses from an srdp checkout, made read-only."""
    (ducklake,) = srdp.extension_directory().glob("*/*/ducklake.duckdb_extension")
    platform_dir = target / ".duckdb" / "extensions" / ducklake.parent.relative_to(srdp.extension_directory())
    platform_dir.mkdir(parents=True)
    for name in ("ducklake", "sqlite_scanner"):
        for suffix in ("", ".info"):
            shutil.copy2(ducklake.parent / f"{name}.duckdb_extension{suffix}", platform_dir)
    (target / "build" / "release").mkdir(parents=True)
    shutil.copy2(srdp.extension_path(), target / "build" / "release" / "srdp.duckdb_extension")
    shutil.copytree(REPO / "dbt", target / "dbt")
    for path in [target, *target.rglob("*")]:
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    return target


def dbt_project_from_header(profile_text: str, project: str) -> str:
    """The dbt_project.yml snippet of the profile's header comment, for project ``project``."""
    lines = profile_text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("# dbt_project.yml of a project"))
    snippet = [line[4:] for line in lines[start + 1:] if line.startswith("#   ")]
    return f"name: {project}\nversion: '1.0.0'\nconfig-version: 2\n" + "\n".join(snippet).replace("<project>", project) + "\n"


@pytest.fixture(scope="module")
def outside(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("dbt_outside")
    checkout = make_checkout(root / "checkout")
    cfg = write_config(root / "config", SRDP_TOML)
    repo_before = {name: listing(REPO / name) for name in (".duckdb/extensions", "dbt")}
    checkout_before = listing(checkout)

    # The profile, generated from outside the checkout for the copy's extension and directory.
    generate = subprocess.run(
        [PY, "-m", "srdp", "dbt-profile", "--config", str(cfg), "--profile", "outside"], cwd=root,
        env={**os.environ, "SRDP_EXTENSION": str(checkout / "build/release/srdp.duckdb_extension"),
             "SRDP_EXTENSION_DIR": str(checkout / ".duckdb/extensions")},
        capture_output=True, text=True, timeout=120,
    )
    assert generate.returncode == 0, generate.stderr
    (root / "profiles").mkdir()
    (root / "profiles" / "profiles.yml").write_text(generate.stdout)

    project = root / "project"
    (project / "models").mkdir(parents=True)
    (project / "dbt_project.yml").write_text(dbt_project_from_header(generate.stdout, "outside"))
    (project / "packages.yml").write_text(f"packages:\n  - local: {checkout / 'dbt'}\n")
    for name, sql in MODELS.items():
        (project / "models" / name).write_text(sql)
    (root / "home").mkdir()
    env = {
        **os.environ,
        "HOME": str(root / "home"),
        "DBT_PROFILES_DIR": str(root / "profiles"),
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
        "DO_NOT_TRACK": "1",
        # Nothing but the profile may point at srdp or its config.
        "SRDP_EXTENSION": str(root / "no-such-extension"),
        "SRDP_EXTENSION_DIR": str(root / "no-such-directory"),
        "SRDP_CONFIG": "",
    }
    runs = [subprocess.run([str(DBT), *args], cwd=project, env=env, capture_output=True, text=True, timeout=300)
            for args in (["deps"], ["run", "--vars", "{n: 3}"], ["run", "--vars", "{n: 5}"])]

    con = srdp.connect(config=cfg)
    con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'reader')")
    rows = {name: sorted(con.execute(f"SELECT * FROM lake.curated.{name}").fetchall()) for name in ("orders", "orders_view")}
    con.close()
    return {
        "root": root, "cfg": cfg, "checkout": checkout, "profile": generate.stdout, "runs": runs, "rows": rows,
        "checkout_before": checkout_before, "checkout_after": listing(checkout),
        "repo_before": repo_before, "repo_after": {name: listing(REPO / name) for name in repo_before},
    }


def test_generated_profile_points_dbt_at_srdp_with_absolute_paths(outside: dict) -> None:
    checkout, cfg = outside["checkout"], outside["cfg"]
    profile = yaml.safe_load(outside["profile"])
    assert profile == {"outside": {"target": "dev", "outputs": {"dev": {
        "type": "duckdb",
        "path": ":memory:",
        "database": "lake",  # dbt's target database: the catalog of that schema
        "schema": "curated",  # the one schema srdp.toml gives to dbt
        "threads": 1,
        # Declares the alias to dbt-duckdb as a DuckLake; the plugin has attached it before.
        "attach": [{"path": "ducklake:srdp:lake", "alias": "lake", "is_ducklake": True}],
        "config_options": {
            "allow_unsigned_extensions": True,
            "extension_directory": str(checkout / ".duckdb" / "extensions"),
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": True,
        },
        "plugins": [{"module": "srdp.dbt.plugin", "alias": "srdp",
                     "config": {"extension": str(checkout / "build" / "release" / "srdp.duckdb_extension"),
                                "catalog": "lake"}}],
        "settings": {"srdp_config": str(cfg)},
    }}}}
    # No `extensions:` list: dbt-duckdb would INSTALL (copy) each entry into the extension directory.
    assert "\n      extensions:" not in outside["profile"]
    assert outside["profile"].startswith(f"# dbt-duckdb profile for srdp, from `python -m srdp dbt-profile --config {cfg}`.\n")


def test_dbt_runs_from_outside_the_checkout_and_writes_nothing_into_it(outside: dict) -> None:
    deps, first, second = outside["runs"]
    for run in outside["runs"]:
        assert run.returncode == 0, run.stdout + run.stderr
    assert "Installed from <local @ " + str(outside["checkout"] / "dbt") + ">" in deps.stdout
    for run in (first, second):
        out = re.sub(r"\x1b\[[0-9;]*m", "", run.stdout)
        # The plugin attached the lake (dbt's target database) through srdp; no hook ran.
        assert "srdp_attach_catalog: catalog=lake | alias=lake | role=writer | read_only=false" in out
        assert "OK created sql table model curated.orders" in out
        assert "OK created sql view model curated.orders_view" in out
        assert "Done. PASS=2 WARN=0 ERROR=0 SKIP=0" in out
    # The second run replaced both relations (5 rows now).
    assert outside["rows"] == {"orders": [(i, i * 10) for i in range(5)], "orders_view": [(i, i * 10 + 1) for i in range(5)]}
    # Not one file of the checkout copy changed or appeared, nor in the real checkout's.
    assert outside["checkout_after"] == outside["checkout_before"]
    assert len(outside["checkout_before"]) > 10  # the listing sees the copy (extensions, the build, the package)
    assert outside["repo_after"] == outside["repo_before"]


def test_control_dbt_duckdb_extensions_entry_copies_srdp_into_the_extension_directory(tmp_path: Path) -> None:
    # What `extensions: [<path>]` in a dbt-duckdb profile does on connect (Environment.initialize_db:
    # conn.install_extension(extension); conn.load_extension(extension)), against an empty directory.
    directory = tmp_path / "extensions"
    directory.mkdir()
    before = listing(directory)
    con = duckdb.connect(config={"allow_unsigned_extensions": "true", "extension_directory": str(directory)})
    con.install_extension(str(srdp.extension_path()))
    con.close()
    added = sorted(set(listing(directory)) - set(before))
    (copied,) = [directory / p for p in added if p.endswith("/srdp.duckdb_extension")]
    assert copied.read_bytes() == srdp.extension_path().read_bytes()


def test_schema_is_the_one_dbt_owns_or_must_be_named(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, SRDP_TOML + '\n[catalogs.lake.schemas.marts]\nwriter = "dbt"\nlayer = "marts"\n')
    with pytest.raises(DbtProfileError) as several:
        render_profile(cfg)
    assert str(several.value) == f"{cfg} gives 'dbt' several schemas (lake.curated, lake.marts); pass --schema with one of them"
    assert '      schema: "marts"\n' in render_profile(cfg, schema="marts")
    with pytest.raises(DbtProfileError) as foreign:
        render_profile(cfg, schema="raw")
    assert str(foreign.value) == f"schema 'raw' is not given to writer 'dbt' in {cfg} (it owns: lake.curated, lake.marts)"
    none = write_config(tmp_path / "none", SRDP_TOML.replace('writer = "dbt"', 'writer = "io_manager"'))
    # The command line prints the error on one line and exits with status 1.
    done = subprocess.run([PY, "-m", "srdp", "dbt-profile", "--config", str(none)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (1, "", f"srdp dbt-profile: {none} gives 'dbt' no schema\n")


LOOKUP = ("srdp looks at $SRDP_EXTENSION, then the file its wheel ships, then a checkout's "
          "build/release/srdp.duckdb_extension; `python -m srdp doctor` shows what it finds")


def test_a_missing_extension_names_srdps_lookup_and_doctor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dbt.adapters.duckdb.plugins import BasePlugin

    built = srdp.extension_path()
    missing = tmp_path / "missing.duckdb_extension"
    cfg = write_config(tmp_path, SRDP_TOML)
    # dbt-profile, through the command line, with $SRDP_EXTENSION naming no file.
    done = subprocess.run([PY, "-m", "srdp", "dbt-profile", "--config", str(cfg)], cwd=tmp_path,
                          env={**os.environ, "SRDP_EXTENSION": str(missing)}, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (
        1, "", f"srdp dbt-profile: srdp extension not found at {missing} (from $SRDP_EXTENSION); "
               f"fix or unset SRDP_EXTENSION ({LOOKUP})\n")

    def first_connection(config: dict) -> duckdb.DuckDBPyConnection:
        plugin = BasePlugin.create("srdp.dbt.plugin", config=config, alias="srdp")
        con = duckdb.connect(config={"allow_unsigned_extensions": "true", "autoinstall_known_extensions": "false"})
        plugin.configure_connection(con)
        return con

    # The plugin with srdp's own lookup, which gives the missing file.
    monkeypatch.setenv("SRDP_EXTENSION", str(missing))
    with pytest.raises(FileNotFoundError) as looked_up:
        first_connection({})
    assert str(looked_up.value) == (
        f"srdp.dbt.plugin: srdp extension not found at {missing} (from $SRDP_EXTENSION); "
        f"fix or unset SRDP_EXTENSION ({LOOKUP})")
    # The plugin with a path in the profile: that path is what to fix.
    gone = tmp_path / "gone" / "srdp.duckdb_extension"
    with pytest.raises(FileNotFoundError) as configured:
        first_connection({"extension": str(gone)})
    assert str(configured.value) == (
        f"srdp.dbt.plugin: srdp extension not found at {gone}, the profile's plugin config `extension:`; "
        f"fix it (`python -m srdp dbt-profile` renders the current path) or remove it to use srdp's own lookup ({LOOKUP})")
    # A path that exists is loaded (the configured path wins over the lookup's missing file).
    con = first_connection({"extension": str(built)})
    assert con.execute("SELECT count(*) FROM srdp_version()").fetchone() == (1,)
    con.close()


def test_the_profile_header_names_the_dbt_package(tmp_path: Path) -> None:
    from srdp import install

    text = render_profile(write_config(tmp_path, SRDP_TOML))
    assert (f"# dbt_project.yml of a project that uses it (its packages.yml: `- local: {REPO / 'dbt'}`,\n"
            "# the dbt package `python -m srdp dbt-package-path` prints); no database:, no hooks:\n") in text
    assert install.dbt_package_path() == REPO / "dbt"
