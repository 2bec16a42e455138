"""`make demo`'s script runs end to end on the embedded default and shows what it claims:
writer and reader processes, inlined counts, pressure, compaction with the data unchanged."""

from __future__ import annotations

import subprocess

from conftest import REPO


def test_demo_script_runs_and_reader_sees_the_writers_rows():
    out = subprocess.run(["bash", "scripts/demo.sh"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert "│ lake    │ lake    │ writer  │ false     │ attached │" in text
    assert "│ lake    │ reader  │ true      │ attached │" in text
    assert "│    30 │ 1410.0 │" in text
    assert 'Cannot execute statement of type "INSERT" on database "lake" which is attached in read-only mode!' in text
    assert "│ raw         │ events     │         2030 │            6 │           1 │               7 │             1 │        1 │ compacted │" in text
    assert "│ DatasetCatalogPressure │ raw         │ users      │          800 │       500 │" in text
    # Row count and checksum are the same after compaction for both datasets.
    unchanged = [line for line in text.splitlines() if line.startswith("│ raw.") and line.endswith("│ true      │")]
    assert [line.split("│")[1].strip() for line in unchanged] == ["raw.events", "raw.users"]
    assert (REPO / "demo" / "catalog" / "lake.sqlite").is_file()
    # The demo ends with the nightly job, run once through Dagster: the late batches are flushed
    # and merged into the one compacted file.
    assert "srdp_maintain_datasets - srdp: lake.raw.events: compacted; 100 inlined rows flushed, files 1 -> 1" in out.stderr
    tail = text[text.index("== 6. "):text.index("== 7. ")]
    assert "dagster run " in tail and ": success" in tail
    # Before it, the application's assets were written through srdp's IO manager.
    writes = [line.split()[:5] for line in tail.splitlines() if line.startswith("  lake.analytics.")]
    assert writes == [
        ["lake.analytics.orders", "replace", "whole", "table", "rows"],
        ["lake.analytics.order_revenue", "replace", "whole", "table", "rows"],
        ["lake.analytics.daily_orders", "replace", "time", "window", "[2026-12-01"],
        ["lake.analytics.daily_orders", "replace", "time", "window", "[2026-12-02"],
    ]
    counts = [line.split("rows ")[1].split()[0] for line in tail.splitlines() if line.startswith("  lake.analytics.")]
    assert counts == ["4", "3", "2", "2"]
    # rows flushed, files before -> after, attempts: 0 where srdp's plan proved the dataset idle
    # and it called nothing (the analytics tables' rows are all inlined: flushed, nothing to merge).
    result_rows = [line.split() for line in tail.splitlines() if line.startswith("lake ")]
    assert result_rows == [
        ["lake", "analytics", "daily_orders", "4", "0", "1", "1", "flushed"],
        ["lake", "analytics", "order_revenue", "3", "0", "1", "1", "flushed"],
        ["lake", "analytics", "orders", "4", "0", "1", "1", "flushed"],
        ["lake", "raw", "events", "100", "1", "1", "1", "compacted"],
        ["lake", "raw", "users", "0", "1", "1", "0", "nothing", "to", "do"],
    ]
    # An independent reader sees exactly what the IO manager wrote.
    import srdp

    con = srdp.connect(config=str(REPO / "examples" / "srdp.toml"))
    con.execute("SELECT * FROM srdp_attach_catalog('lake')")
    assert con.execute("SELECT customer, revenue FROM lake.analytics.order_revenue ORDER BY 1").fetchall() == [
        ("ada", 42.75), ("bob", 8.0), ("cy", 4.75)
    ]
    assert con.execute("SELECT count(*), sum(orders) FROM lake.analytics.daily_orders").fetchone() == (4, 16)
    con.execute("DETACH lake")
    con.close()
    # Step 7: the whole platform, dlt -> dbt -> IO manager, as one asset graph on its own lake.
    platform = text[text.index("== 7. "):]
    edges = [line.strip() for line in platform.splitlines() if " -> lake/" in line]
    assert edges == [
        "lake/curated/orders_clean -> lake/analytics/daily_revenue",
        "lake/landing/payments -> lake/raw_landed/payments",
        "lake/raw/orders -> lake/curated/orders_clean",
        "lake/raw/orders__items -> lake/curated/orders_clean",
    ]
    assert [line.strip() for line in platform.splitlines() if line.strip().startswith("lake.") and "rows" in line] == [
        "lake.raw.orders: 3 rows",
        "lake.raw.orders__items: 4 rows",
        "lake.raw_landed.payments: 3 rows",
        "lake.curated.orders_clean: 3 rows",
        "lake.analytics.daily_revenue: 2 rows",
    ]
    assert (REPO / "demo" / "platform" / "catalog" / "lake.sqlite").is_file()
    # The landing zone is a folder beside the lake's data, with dlt's files in it.
    landing = REPO / "demo" / "platform" / "landing" / "landing"
    assert (landing / "init").is_file() and len(list((landing / "payments").glob("*.parquet"))) == 1
