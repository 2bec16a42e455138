"""A picture of one table's health on its asset page in Dagster's UI: `dagster dev` on loopback
over a small code location after a few runs, and a headless Chromium screenshot of the asset's
Metadata section switched to Plots (the srdp observations the monitor and the maintenance job
record, beside the IO manager's materialization metadata).

The lake (SQLite catalog) has an IO-manager asset ``lake/analytics/events`` (appended 20 or 4
rows per run: files and inlined rows) and a table no asset produces, ``lake.raw.orders``
(loaded with plain SQL, as dlt would), declared as an ``AssetSpec`` (``--asset lake/raw/orders``). Runs, in the script's process on the Dagster home the UI
then reads: eight rounds of (materialize the asset, load orders, run the hourly monitor), with
the nightly maintenance after rounds 3 and 6, then one more monitor run.

Not part of `make test`. Needs Chromium (`apt-get install -y chromium`) and
`dagster-webserver==1.13.27` importable by the Python that runs this script (it brings the
`websockets` package the script drives Chromium's DevTools protocol with):

    .venv/bin/python scripts/asset_health_screenshot.py [--out docs/images/asset-health-plots.png]
        [--asset lake/analytics/events] [--port 3333] [--keep DIR]
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CONFIG = """
[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/lake"
data_inlining_row_limit = 10
pressure_warning_rows = 12

[catalogs.lake.schemas.analytics]
writer = "io_manager"
layer = "curated"
"""

DEFINITIONS = '''
"""The screenshot's code location: one IO-manager asset and srdp's jobs."""
import os

import dagster as dg
import pyarrow as pa

from srdp import dagster as sd

CFG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "srdp.toml")
TABLE = sd.srdp_table("lake", "analytics", "events", config=CFG)


class Rows(dg.Config):
    rows: int = 20


@dg.asset(key=TABLE.key, metadata={**TABLE.metadata, "write_mode": "append"})
def events(config: Rows) -> pa.Table:
    return pa.table({"id": pa.array(range(config.rows), pa.int64())})


# A table no asset produces (loaded as dlt would), declared so its page shows plots and checks.
ORDERS = sd.srdp_table("lake", "raw", "orders", config=CFG)
orders = dg.AssetSpec(key=ORDERS.key, metadata=ORDERS.metadata)

defs = sd.add_srdp_definitions(
    dg.Definitions(assets=[events, orders]), CFG, io_manager=True, default_status=dg.DefaultScheduleStatus.STOPPED
)
'''


def make_runs(work: Path) -> None:
    """The lake and the runs, recorded in the Dagster home ``work/home``."""
    import dagster as dg

    import srdp

    con = srdp.connect(config=work / "srdp.toml")
    con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
    con.execute("CREATE SCHEMA lake.raw")
    con.execute("CREATE TABLE lake.raw.orders (id BIGINT, amount DOUBLE)")
    con.execute("DETACH lake")
    con.close()

    sys.path.insert(0, str(work))
    import definitions  # the code location written next to srdp.toml

    defs = definitions.defs
    instance = dg.DagsterInstance.get()
    asset_job = defs.resolve_implicit_global_asset_job_def()
    from srdp.dagster import MAINTENANCE_JOB, MONITOR_JOB

    for round_ in range(1, 9):
        rows = 20 if round_ % 2 else 4
        result = asset_job.execute_in_process(
            run_config={"ops": {"lake__analytics__events": {"config": {"rows": rows}}}},
            instance=instance,
        )
        assert result.success
        con = srdp.connect(config=work / "srdp.toml")
        con.execute("SELECT * FROM srdp_attach_catalog('lake', role := 'writer')").fetchall()
        con.execute(f"INSERT INTO lake.raw.orders SELECT range, range * 1.5 FROM range({3 * round_})")
        con.execute("DETACH lake")
        con.close()
        assert defs.resolve_job_def(MONITOR_JOB).execute_in_process(instance=instance).success
        if round_ in (3, 6):
            assert defs.resolve_job_def(MAINTENANCE_JOB).execute_in_process(instance=instance).success
        time.sleep(1)  # distinct timestamps on the plots
    assert defs.resolve_job_def(MONITOR_JOB).execute_in_process(instance=instance).success


def wait_for(url: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit(f"dagster dev did not answer {url} within {seconds:.0f} s")
        time.sleep(1)


def screenshot_plots(chromium: str, url: str, profile: Path) -> bytes:
    """The asset page at ``url`` with its Metadata section switched to Plots, as PNG bytes:
    headless Chromium driven over the DevTools protocol (the switch is a click)."""
    import asyncio

    import websockets  # installed with dagster-webserver (uvicorn[standard])

    port = free_port()
    browser = subprocess.Popen(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--remote-debugging-port={port}",
            "--window-size=1440,1500",
            f"--user-data-dir={profile}",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json", timeout=5) as response:
                    targets = json.load(response)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("Chromium's DevTools endpoint did not answer within 60 s")
                time.sleep(0.5)
        page = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")

        async def drive() -> bytes:
            async with websockets.connect(page, max_size=100_000_000) as ws:
                ids = iter(range(1, 1_000_000))

                async def call(method: str, **params: object) -> dict:
                    mid = next(ids)
                    await ws.send(json.dumps({"id": mid, "method": method, "params": params}))
                    while True:
                        message = json.loads(await ws.recv())
                        if message.get("id") == mid:
                            if "error" in message:
                                raise SystemExit(f"Chromium {method}: {message['error']}")
                            return message["result"]

                async def evaluate(js: str) -> object:
                    return (await call("Runtime.evaluate", expression=js, returnByValue=True))["result"].get("value")

                await call("Page.enable")
                await call("Page.navigate", url=url)
                for _ in range(60):  # until the Plots switch of the Metadata section is there
                    await asyncio.sleep(1)
                    clicked = await evaluate(
                        "(() => { const b = [...document.querySelectorAll('button')]"
                        ".find(x => x.textContent.trim() === 'Plots'); if (!b) return false; b.click(); return true; })()"
                    )
                    if clicked:
                        break
                else:
                    raise SystemExit(f"no Plots switch on {url}: does the asset have numeric metadata?")
                await asyncio.sleep(5)
                await evaluate(
                    "(() => { const h = [...document.querySelectorAll('*')].find(x => x.children.length === 0"
                    " && x.textContent.trim() === 'Metadata'); if (h) h.scrollIntoView(); })()"
                )
                await asyncio.sleep(2)
                return base64.b64decode((await call("Page.captureScreenshot", format="png"))["data"])

        return asyncio.run(drive())
    finally:
        browser.terminate()
        browser.wait(timeout=30)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(REPO / "docs" / "images" / "asset-health-plots.png"))
    ap.add_argument("--asset", default="lake/analytics/events", help="the asset key, parts joined by /")
    ap.add_argument("--port", type=int, default=0, help="default: a free port")
    ap.add_argument("--keep", help="build in this folder and keep it (default: a temporary one)")
    args = ap.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if chromium is None:
        raise SystemExit("Chromium not found: apt-get install -y chromium")
    try:
        import dagster_webserver  # noqa: F401
    except ImportError:
        raise SystemExit(f"{sys.executable} cannot import dagster_webserver: pip install dagster-webserver==1.13.27")

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="srdp-asset-health-"))
    work.mkdir(parents=True, exist_ok=True)
    (work / "srdp.toml").write_text(CONFIG)
    (work / "definitions.py").write_text(textwrap.dedent(DEFINITIONS))
    home = work / "home"
    home.mkdir(exist_ok=True)
    os.environ["DAGSTER_HOME"] = str(home)
    make_runs(work)

    port = args.port or free_port()
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    log = open(work / "dagster-dev.log", "w")
    server = subprocess.Popen(
        [sys.executable, "-m", "dagster", "dev", "-f", str(work / "definitions.py"), "-h", "127.0.0.1", "-p", str(port)],
        cwd=work,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_for(f"http://127.0.0.1:{port}/server_info", 180)
        # Dagster's first-visit "join the community" dialog is server state: mark it seen.
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/graphql",
            data=json.dumps({"query": "mutation { setNuxSeen }"}).encode(),
            headers={"Content-Type": "application/json"},
        )
        urllib.request.urlopen(request, timeout=30).read()
        url = f"http://127.0.0.1:{port}/assets/{args.asset}"
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(screenshot_plots(chromium, url, work / "chromium"))
        print(f"{out}: {url} ({out.stat().st_size} bytes)")
    finally:
        os.killpg(server.pid, 15)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, 9)
            server.wait(timeout=30)
        log.close()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
