"""An application's Dagster composition root with srdp's maintenance and monitor added.

    .venv/bin/dagster definitions validate -f examples/dagster_definitions.py
    .venv/bin/dagster job execute -f examples/dagster_definitions.py -j srdp_dataset_maintenance

The application keeps its own definitions; srdp adds the nightly maintenance job and schedule
(02:00 UTC) and the hourly pressure monitor, all reading the same srdp.toml as every other
component. Set SRDP_CONFIG to use another definition file.
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from srdp.dagster import add_srdp_definitions

SRDP_TOML = os.environ.get("SRDP_CONFIG") or str(Path(__file__).resolve().parent / "srdp.toml")


@dg.asset(group_name="app")
def daily_report() -> str:
    """An unrelated asset of the application."""
    return "ok"


def app_definitions() -> dg.Definitions:
    """The application's own definitions (its modules would contribute here)."""
    return dg.Definitions(assets=[daily_report])


# At the composition root, beside the module definitions: only when datasets are enabled.
defs = add_srdp_definitions(app_definitions(), SRDP_TOML, enabled=os.environ.get("SRDP_DATASETS", "1") != "0")
