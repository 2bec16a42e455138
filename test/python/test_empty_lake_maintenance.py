"""Maintenance on a lake with no tables yet: a new user's first srdp_compact / srdp_flush."""

from __future__ import annotations

from pathlib import Path

import pytest

import srdp
from conftest import write_config


@pytest.mark.parametrize("function", ["srdp_compact", "srdp_flush", "srdp_inlined_row_count"])
def test_maintenance_of_a_lake_without_tables_returns_no_rows(tmp_path: Path, function: str) -> None:
    """It used to fail with `Parser Error: syntax error at or near ")"` (srdp read `table_id IN ()`)."""
    cfg = write_config(tmp_path, '[catalogs.lake]\nmetadata = "sqlite:catalog/lake.sqlite"\ndata_path = "data/"\n')
    con = srdp.connect(config=str(cfg))
    con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')")
    before = con.execute("SELECT count(*) FROM lake.snapshots()").fetchone()
    assert con.execute(f"SELECT * FROM {function}('lake')").fetchall() == []
    assert con.execute("SELECT count(*) FROM lake.snapshots()").fetchone() == before
