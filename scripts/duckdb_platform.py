#!/usr/bin/env python3
"""Print DuckDB's platform string (``PRAGMA platform``, e.g. ``linux_amd64``).

Run it with the repo's venv (``.venv/bin/python scripts/duckdb_platform.py``) so the
answer comes from the same DuckDB build that will load the extension. Used as the
``--platform`` value of ``scripts/append_footer.py``.
"""

import duckdb


def main() -> int:
    con = duckdb.connect(":memory:")
    try:
        (platform,) = con.execute("PRAGMA platform").fetchone()
    finally:
        con.close()
    print(platform)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
