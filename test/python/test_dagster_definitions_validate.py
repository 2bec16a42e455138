"""``add_srdp_definitions(..., io_manager=True)`` checks srdp.toml when the code location loads,
so ``dagster definitions validate`` (Dagster's own CLI, in a fresh process) fails on a catalog
typo, a missing file, or an IO-manager asset in a schema its writer does not own, instead of the
first run failing. Assets the IO manager never stores (dbt's and dlt's specs, ``Nothing``
outputs) are not checked."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import dagster as dg
import pytest

from conftest import REPO, write_config
from srdp.dagster import add_srdp_definitions

CONFIG = """
[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/lake"

[catalogs.lake.schemas.marts]
writer = "io_manager"
layer = "curated"

[catalogs.lake.schemas.staging]
writer = "dbt"
layer = "curated"
"""

DEFS = """
import dagster as dg
from srdp.dagster import add_srdp_definitions

@dg.asset(key_prefix=[{schema!r}])
def orders() -> int:
    return 1

staged = dg.AssetSpec(["staging", "orders_dbt"])  # dbt's: stored by dbt, not the IO manager

defs = add_srdp_definitions(
    dg.Definitions(assets=[orders, staged]), config={config!r}, io_manager=True, catalog={catalog!r}
)
"""


@pytest.fixture(scope="module")
def cfg(tmp_path_factory) -> Path:
    return Path(write_config(tmp_path_factory.mktemp("validate"), CONFIG))


def validate(folder: Path, config: str, catalog: str = "lake", schema: str = "marts") -> tuple[int, str]:
    """``dagster definitions validate -f defs.py`` on a code location built from ``DEFS``."""
    (folder / "defs.py").write_text(textwrap.dedent(DEFS.format(config=config, catalog=catalog, schema=schema)))
    done = subprocess.run(
        [str(REPO / ".venv" / "bin" / "dagster"), "definitions", "validate", "-f", "defs.py"],
        cwd=folder,
        env={**os.environ, "DAGSTER_HOME": str(folder)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode, done.stdout + done.stderr


def test_a_catalog_typo_fails_dagster_definitions_validate(cfg, tmp_path) -> None:
    code, output = validate(tmp_path, str(cfg), catalog="lakee")
    assert code != 0
    assert (
        f"add_srdp_definitions(io_manager=True, catalog='lakee'): {cfg} defines no catalog 'lakee' "
        "(its catalogs: lake; did you mean 'lake'?)"
    ) in output


def test_the_same_code_location_with_the_right_catalog_validates(cfg, tmp_path) -> None:
    # The control: the check passes the good location (and leaves dbt's spec in a dbt schema alone).
    code, output = validate(tmp_path, str(cfg))
    assert (code, "All code locations passed validation." in output) == (0, True), output


def test_a_missing_config_file_fails_when_the_location_loads(tmp_path) -> None:
    missing = tmp_path / "no" / "srdp.toml"
    with pytest.raises(ValueError) as raised:
        add_srdp_definitions(dg.Definitions(), config=str(missing), io_manager=True)
    assert str(raised.value) == (
        f"add_srdp_definitions(io_manager=True): the srdp.toml {missing} does not exist; "
        "pass config= the path of the definition file"
    )


def test_an_asset_in_a_schema_another_writer_owns_fails_validate(cfg, tmp_path) -> None:
    code, output = validate(tmp_path, str(cfg), schema="staging")
    assert code != 0
    assert (
        "add_srdp_definitions(io_manager=True): asset 'staging/orders' is stored by the IO manager in "
        "lake.staging.orders, and srdp_check_writer: writer 'io_manager' may not write schema 'staging' "
        "of catalog 'lake': it is owned by 'dbt' (single_writer)."
    ) in output
