"""The cost of reading a srdp.toml with many schema patterns (the single_writer rule's checks).

Every read of a changed srdp.toml validates it, and with the single_writer rule on every pattern
is checked against the schemas, the tenant datasets and the patterns above it. This writes a file
of N patterns (``--patterns 2000,8000,10000``) in two shapes and times the first
``srdp_catalogs`` call of a fresh process (the read; later calls reuse it), with the rule on and
off (off: parsing and the other checks only):

* ``disjoint``: ``p00000_*``, ``p00001_*``, ...: no two overlap.
* ``nested``: ``a0_*``, ``aa1_*``, ... (1 to 60 ``a``): every pattern's prefix shares its start
  with many others, so the overlap checks look at every shorter prefix.

All patterns have one writer (a file the rule accepts, so every pattern is checked). Wall time
and the process's CPU time are printed; on a busy machine the CPU time is the one to compare.

    .venv/bin/python bench/bench_config.py --patterns 2000,8000,10000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: One fresh process: read the file once, print wall and CPU seconds.
READ = """
import json, sys, time, srdp
con = srdp.connect(config=sys.argv[1])
wall, cpu = time.perf_counter(), time.process_time()
srdp.call(con, "srdp_catalogs")
print(json.dumps([time.perf_counter() - wall, time.process_time() - cpu]))
"""


def write(folder: Path, patterns: int, shape: str, rule: bool) -> Path:
    lines = ["[catalogs.lake]", 'metadata = "sqlite:catalog/lake.sqlite"', 'data_path = "data/lake"', ""]
    if not rule:
        lines += ["[rules]", "single_writer = false", ""]
    for i in range(patterns):
        prefix = f"p{i:05d}_" if shape == "disjoint" else "a" * (i % 60 + 1) + f"{i}_"
        lines += [f'[catalogs.lake.schemas."{prefix}*"]', 'writer = "dbt"', 'layer = "curated"', ""]
    path = folder / f"srdp-{patterns}-{shape}-{'on' if rule else 'off'}.toml"
    path.write_text("\n".join(lines))
    return path


def read(path: Path) -> tuple[float, float]:
    out = subprocess.run(
        [sys.executable, "-c", READ, str(path)], capture_output=True, text=True, check=True, env=os.environ
    ).stdout
    wall, cpu = json.loads(out)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--patterns", default="2000,8000,10000", help="comma-separated pattern counts")
    parser.add_argument("--repeats", type=int, default=3, help="fresh processes per case (the best is shown)")
    args = parser.parse_args()
    print(f"{'patterns':>8}  {'shape':8}  {'rule':4}  {'wall s':>7}  {'cpu s':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(p) for p in args.patterns.split(",")):
            for shape in ("disjoint", "nested"):
                for rule in (True, False):
                    path = write(Path(tmp), n, shape, rule)
                    wall, cpu = min(read(path) for _ in range(args.repeats))
                    print(f"{n:>8}  {shape:8}  {'on' if rule else 'off':4}  {wall:7.3f}  {cpu:7.3f}", flush=True)


if __name__ == "__main__":
    main()
