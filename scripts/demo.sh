#!/usr/bin/env bash
# make demo: the main job on the embedded default (examples/srdp.toml: a SQLite catalog and a
# local data folder under demo/), driven through the DuckDB 1.5.5 CLI exactly as a user would.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
rm -rf demo
mkdir -p demo

# What every DuckDB session of the demo starts with: the local extension directory (no
# downloads), the srdp extension, and the shared definition.
cat > demo/session.sql <<SQL
SET extension_directory = '$REPO/.duckdb/extensions';
SET autoinstall_known_extensions = false;
LOAD '$REPO/build/release/srdp.duckdb_extension';
SET srdp_config = '$REPO/examples/srdp.toml';
SQL
duck() { .venv/bin/duckdb -unsigned -init demo/session.sql "$@" 2>&1 | grep -v 'Loading resources from' | sed 's/\x1b\[[0-9;]*m//g'; }
step() { printf '\n== %s\n' "$*"; }

step "1. The extension and the definition it reads"
duck -c "SELECT * FROM srdp_version();"
duck -c "SELECT catalog, backend, metadata, metadata_schema, data_path, data_inlining_row_limit FROM srdp_catalogs();"

step "2. Writer process: attach as writer (creates the lake), write small batches"
duck <<'SQL'
SELECT catalog, alias, role, read_only, status FROM srdp_attach_catalog('lake', role := 'writer');
CREATE SCHEMA IF NOT EXISTS lake.raw;
CREATE TABLE lake.raw.events (id BIGINT, kind VARCHAR, amount DOUBLE);
INSERT INTO lake.raw.events SELECT range, 'click', range * 1.5 FROM range(0, 10);
INSERT INTO lake.raw.events SELECT range, 'view', range * 0.5 FROM range(10, 25);
INSERT INTO lake.raw.events SELECT range, 'buy', range * 9.0 FROM range(25, 30);
SELECT kind, count(*) AS rows, sum(amount) AS amount FROM lake.raw.events GROUP BY kind ORDER BY kind;
SQL

step "3. Reader process: the default role is read-only and sees the same rows"
duck <<'SQL'
SELECT catalog, role, read_only, status FROM srdp_attach_catalog('lake');
SELECT count(*) AS rows, sum(amount) AS amount FROM lake.raw.events;
SQL
echo "(and it cannot write:)"
duck -c "SELECT count(*) FROM srdp_attach_catalog('lake'); INSERT INTO lake.raw.events VALUES (99, 'oops', 0);" | grep Error || true

step "Done. The lake is in demo/: catalog/lake.sqlite and data/lake/"
