"""dbt's own adapter test suite (dbt-tests-adapter 1.20.0) through srdp's documented dbt set-up.

The test files next to this one are dbt-duckdb 1.11.1's ``tests/functional/adapter`` classes
(Apache-2.0, see LICENSE-dbt-duckdb), unchanged but for their attribution header. This conftest
gives them what the README's dbt section tells a user to do, and nothing else:

* the profile is ``python -m srdp dbt-profile`` for a per-class ``srdp.toml`` (a SQLite DuckLake
  catalog ``lake`` in the class's temporary folder) that gives the writer ``dbt`` the pattern
  ``"<unique_schema>*"``: the class's ``unique_schema`` and every schema dbt's tests derive from
  it (``<schema>_test``, ``<schema>_dbt_test__audit`` cut to PostgreSQL's 63 characters, ...),
  as a user gives dbt ``"dbt_*"``; dbt's target database is the lake;
* the srdp dbt package (a local package, linked as ``dbt deps`` links it) and the ``dispatch:``
  entry ``search_order: [test, srdp, dbt]``, merged into each class's own project config;
* no ``database:``, no hooks, no pre-hooks.

dbt-duckdb's own markers decide what is skipped, with this run's settings: the ``memory`` profile
and the ``ducklake`` database type (as dbt-duckdb's DuckLake CI job), except its
``skip_database_type("ducklake")`` markers: those 36 tests run too. Each either passes (srdp's
macros do what DuckLake can: a seed's full refresh, comments) or fails on a limit of DuckLake 1.0
itself and is a strict xfail whose reason quotes DuckLake's error (:data:`ENGINE_LIMITS`,
``ducklake_limits.py``).

dbt's fixtures are imported into this folder's conftest only (not a ``pytest_plugins`` entry),
so no other test sees them.

For comparison, ``SRDP_DBT_SUITE_TARGET=by-hand`` runs the same classes on a DuckLake attached by
hand in dbt-duckdb's profile (``attach:`` of ``ducklake:sqlite:...`` as ``lake``, the target
database), without srdp, its package or its dispatch entry (the issue's middle column), and
``SRDP_DBT_SUITE_TARGET=duckdb-file`` on a DuckDB database file with dbt-duckdb's file-profile
markers (the issue's last column).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from dbt.tests.fixtures.project import *  # noqa: F403  (dbt's functional-test fixtures, this folder only)
from dbt.tests.fixtures.project import write_file

from srdp.dbt.profile import render_profile

from .ducklake_limits import LIMITS, Limit

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]

#: ``srdp`` (default): the documented srdp set-up; ``by-hand``: dbt-duckdb's own DuckLake attach;
#: ``duckdb-file``: dbt-duckdb on a DuckDB database file (no lake).
TARGET = os.environ.get("SRDP_DBT_SUITE_TARGET", "srdp")

#: This run's settings for dbt-duckdb's skip markers: on a lake, its DuckLake CI job's
#: (--profile memory --database-type ducklake); on a file, its file job's (--profile file).
PROFILE_TYPE = "file" if TARGET == "duckdb-file" else "memory"
DATABASE_TYPE = "duckdb" if TARGET == "duckdb-file" else "ducklake"

_DISPATCH = {"macro_namespace": "dbt", "search_order": ["test", "srdp", "dbt"]}

_CONSTRAINTS = "test_constraints.py::"
_PRIMARY_KEY_TESTS = (
    "TestTableConstraintsColumnsEqual::test__constraints_wrong_column_order",
    "TestIncrementalConstraintsColumnsEqual::test__constraints_wrong_column_order",
    "TestTableConstraintsRuntimeDdlEnforcement::test__constraints_ddl",
    "TestTableConstraintsRollback::test__constraints_enforcement_rollback",
    "TestIncrementalConstraintsRuntimeDdlEnforcement::test__constraints_ddl",
    "TestIncrementalConstraintsRollback::test__constraints_enforcement_rollback",
    "TestModelConstraintsRuntimeEnforcement::test__model_constraints_ddl",
    "TestForeignKeyRerun::test_rerun",
    "TestForeignKeyRerun::test_rerun_with_threads",
    "TestForeignKeyRerun::test_rerun_dependent_only",
    "TestForeignKeyRerun::test_unselected_dependent_is_an_error",
    "TestForeignKeyRerun::test_failed_child_rebuild_rolls_back",
    "TestForeignKeyRerun::test_failed_child_rebuild_after_parent_preserves_dependents",
    "TestForeignKeyRemoval::test_removing_foreign_key_does_not_leave_stale_reference",
    "TestForeignKeySharedDependentFailure::test_later_parent_failure_preserves_shared_dependent",
    "TestForeignKeyDependentWithoutRef::test_dependent_without_ref_is_an_error",
    "TestForeignKeyIncrementalDependent::test_incremental_dependent",
    "TestForeignKeyFailedRebuildWithoutTransactions::test_failed_rebuild_keeps_old_rows",
)

#: Tests that fail on every DuckLake (attached by hand too) for a limit of DuckLake 1.0 itself:
#: node id suffix -> the limit (ducklake_limits.py: its statement and DuckLake's error, checked on
#: plain DuckDB by test_dbt_ducklake_limits.py) and how the test fails on it. Each fails on that
#: error in its first dbt command (a model with a primary_key constraint, a merge_clauses or
#: merge_returning_columns config dbt-duckdb refuses for a lake: "dbt exit state did not match
#: expected"), or, for a view's column comment, at the one assertion that reads it (the comment is
#: None; the view builds and the table's and view's own comments pass). On a lake they run as
#: strict xfails with that exception, whose reason quotes DuckLake's error: one that passes, or
#: fails otherwise, fails the suite.
ENGINE_LIMITS: dict[str, tuple[Limit, type[BaseException]]] = {
    **{_CONSTRAINTS + test: (LIMITS["primary_key"], AssertionError) for test in _PRIMARY_KEY_TESTS},
    "test_incremental.py::TestIncrementalMerge::test_merge_with_returning": (LIMITS["merge_returning"], AssertionError),
    "test_incremental.py::TestIncrementalMerge::test_merge_custom_clauses": (LIMITS["merge_actions"], AssertionError),
    "test_persist_docs.py::TestPersistDocs::test_has_comments_pglike": (LIMITS["view_column_comment"], AttributeError),
}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "skip_profile(*profiles, reason=...): dbt-duckdb's profile skip marker")
    config.addinivalue_line("markers", "skip_database_type(*types, reason=...): dbt-duckdb's database skip marker")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE not in item.path.parents:
            continue  # this hook sees the whole session: only this folder's items
        for name, value in (("skip_profile", PROFILE_TYPE), ("skip_database_type", DATABASE_TYPE)):
            if (name, value) == ("skip_database_type", "ducklake"):
                continue  # run on the lake: each passes, or is a strict xfail in ENGINE_LIMITS
            for marker in item.iter_markers(name):
                if value in marker.args:
                    item.add_marker(pytest.mark.skip(reason=marker.kwargs.get("reason", f"dbt-duckdb skips it on {value}")))
                    break
        for suffix, (limit, raises) in ENGINE_LIMITS.items():
            if DATABASE_TYPE == "ducklake" and item.nodeid.endswith(suffix):
                reason = f"DuckLake 1.0 limit ({limit.what}): `{limit.error}`"
                item.add_marker(pytest.mark.xfail(reason=reason, raises=raises, strict=True))


@pytest.fixture(scope="session")
def profile_type() -> str:
    return PROFILE_TYPE


@pytest.fixture(scope="session")
def database_type() -> str:
    return DATABASE_TYPE


SRDP_TOML = """\
[catalogs.lake]
metadata = "sqlite:{root}/catalog.sqlite"
data_path = "{root}/data/"
{schemas}"""


@pytest.fixture(scope="class", autouse=True)
def fresh_dbt_adapter() -> Iterator[None]:
    """Each class starts and ends with no dbt adapter in the process. dbt keeps its adapters, and
    dbt-duckdb its DuckDB environment, per process: an earlier test in this worker that built an
    adapter in-process (dagster-dbt does, for relation names) left them holding its own profile,
    and a class's first query ran on that test's connection."""
    _reset_dbt_adapters()
    yield
    _reset_dbt_adapters()


def _reset_dbt_adapters() -> None:
    from dbt.adapters.duckdb.connections import DuckDBConnectionManager
    from dbt.adapters.factory import reset_adapters

    reset_adapters()
    with DuckDBConnectionManager._LOCK:
        if DuckDBConnectionManager._ENV is not None:
            DuckDBConnectionManager._ENV.close()
            DuckDBConnectionManager._ENV = None


@pytest.fixture(scope="class")
def logs_dir(prefix: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """dbt's logs of one class in a temporary folder (dbt-tests-adapter's own fixture writes them
    under ``<rootdir>/logs/``, inside the checkout)."""
    folder = tmp_path_factory.mktemp("dbt-logs") / prefix
    os.environ["DBT_LOG_PATH"] = str(folder)
    yield str(folder)
    del os.environ["DBT_LOG_PATH"]


@pytest.fixture(scope="class")
def dbt_profile_target(unique_schema: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The documented profile (``python -m srdp dbt-profile``'s text) for this class's srdp.toml."""
    root = tmp_path_factory.mktemp("srdp_lake")
    if TARGET == "by-hand":
        return _by_hand_target(root)
    if TARGET == "duckdb-file":
        return _duckdb_file_target(root)
    # One pattern: the unique schema and what dbt's tests derive from it (custom schemas, stored
    # failures in <schema>_dbt_test__audit, which dbt's store-failures test cuts to 63 characters).
    schemas = f'\n[catalogs.lake.schemas."{unique_schema}*"]\nwriter = "dbt"\nlayer = "curated"\n'
    config = root / "srdp.toml"
    config.write_text(SRDP_TOML.format(root=root, schemas=schemas))
    profile = yaml.safe_load(render_profile(config, profile="test", target="default", schema=unique_schema))
    target: dict[str, Any] = profile["test"]["outputs"]["default"]
    return target


def _duckdb_file_target(root: Path) -> dict[str, Any]:
    """dbt-duckdb's profile on a DuckDB database file (no DuckLake, no srdp)."""
    import srdp

    return {"type": "duckdb", "path": str(root / "dbt.duckdb"), "threads": 1,
            "config_options": dict(srdp.duckdb_config())}


def _by_hand_target(root: Path) -> dict[str, Any]:
    """dbt-duckdb's profile with the lake attached by hand (no srdp)."""
    import srdp

    (root / "data").mkdir()
    return {
        "type": "duckdb", "path": ":memory:", "database": "lake", "threads": 1,
        "config_options": dict(srdp.duckdb_config()),
        "attach": [{"path": f"ducklake:sqlite:{root}/catalog.sqlite", "alias": "lake",
                    "options": {"data_path": f"{root}/data/"}}],
    }


@pytest.fixture(scope="class")
def dbt_project_yml(project_root: Any, project_config_update: Any) -> dict[str, Any]:
    """dbt's dbt_project.yml fixture, with srdp's ``dispatch:`` entry added to the class's config."""
    project_config: dict[str, Any] = {"name": "test", "profile": "test", "flags": {"send_anonymous_usage_stats": False}}
    if project_config_update:
        updates = yaml.safe_load(project_config_update) if isinstance(project_config_update, str) else project_config_update
        project_config.update(updates)
    if TARGET == "srdp":
        project_config["dispatch"] = [*project_config.get("dispatch", []), _DISPATCH]
    write_file(yaml.safe_dump(project_config), project_root, "dbt_project.yml")
    return project_config


@pytest.fixture(scope="class")
def packages_yml(project_root: Any, packages: Any) -> None:
    """dbt's packages.yml fixture with the srdp package added, linked into dbt_packages/ as
    ``dbt deps`` links a local package."""
    data = (yaml.safe_load(packages) if isinstance(packages, str) else dict(packages or {})) or {}
    if TARGET != "srdp":
        if data:
            write_file(yaml.safe_dump(data), project_root, "packages.yml")
        return
    data["packages"] = [*data.get("packages", []), {"local": str(REPO / "dbt")}]
    write_file(yaml.safe_dump(data), project_root, "packages.yml")
    installed = Path(str(project_root)) / "dbt_packages"
    installed.mkdir(exist_ok=True)
    link = installed / "srdp"
    if not link.exists():
        os.symlink(REPO / "dbt", link)
