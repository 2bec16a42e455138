"""srdp_write_audit on a fresh lake is clean: DuckLake's own schema ``main``, which every lake has
from its first snapshot, is flagged only once something was written to it."""

from __future__ import annotations

from pathlib import Path

import srdp

from conftest import write_config

LAKE = """
[catalogs.lake]
metadata = "sqlite:lake/catalog.sqlite"
data_path = "lake/data/"

[catalogs.lake.schemas.curated]
writer = "dbt"
layer = "curated"
"""

QUERY = "SELECT schema_name, change, allowed, note FROM srdp_write_audit('lake') WHERE NOT allowed ORDER BY ALL"


def test_main_is_flagged_only_after_a_write_into_it(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, LAKE)
    con = srdp.connect(config=cfg)
    try:
        con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
        assert con.execute("SELECT snapshot_id, schema_name, change, allowed, note FROM srdp_write_audit('lake')"
                           ).fetchall() == [(0, "main", "schema created", True, "DuckLake created the catalog")]
        assert con.execute(QUERY).fetchall() == []
        con.execute("CREATE TABLE lake.main.stray AS SELECT 1 AS id")
        assert con.execute(QUERY).fetchall() == [
            ("main", "created", False, "unknown writer (no commit author)"),
            ("main", "inserted", False, "unknown writer (no commit author)"),
            ("main", "schema not in srdp.toml", False,
             "no writer may write it while single_writer is on; define [catalogs.lake.schemas.main] "
             "with writer and layer, or drop it"),
        ]
    finally:
        con.close()
