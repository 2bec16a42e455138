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

step "4. Loader process: many small batches into two datasets (small batches stay inlined in the catalog)"
{
  echo "SELECT status FROM srdp_attach_catalog('lake', role := 'writer');"
  echo "CREATE TABLE lake.raw.users (id BIGINT, name VARCHAR);"
  for b in $(seq 0 39); do
    echo "INSERT INTO lake.raw.events SELECT 1000 + $b * 50 + range, 'batch', range FROM range(50);"
    echo "INSERT INTO lake.raw.users SELECT $b * 20 + range, 'user' || ($b * 20 + range) FROM range(20);"
  done
  for b in $(seq 0 5); do
    echo "INSERT INTO lake.raw.events SELECT 100000 + $b * 2000 + range, 'bulk', range FROM range(2000);"
  done
} | duck > /dev/null
echo "(40 batches of 50 events, 40 batches of 20 users, 6 bulk batches of 2,000 events)"

step "5. Maintenance process: measure, compact, prove nothing changed"
duck <<'SQL'
SELECT status FROM srdp_attach_catalog('lake', role := 'writer');
.print -- inlined rows per dataset
SELECT schema_name, table_name, inlined_rows, inlined_tables FROM srdp_inlined_row_count('lake');
.print -- catalog pressure (threshold 500 for the demo; the definition says 100,000)
SELECT event, schema_name, table_name, inlined_rows, threshold FROM srdp_catalog_pressure('lake', threshold := 500);
CREATE TEMP TABLE before AS
  SELECT 'raw.events' AS dataset, count(*) AS row_count, sum(hash(id, kind, amount)) AS checksum FROM lake.raw.events
  UNION ALL SELECT 'raw.users', count(*), sum(hash(id, name)) FROM lake.raw.users;
.print -- row count and checksum before
SELECT * FROM before ORDER BY dataset;
.print -- srdp_compact: flush, then merge, one dataset at a time
SELECT schema_name, table_name, rows_flushed, files_before, files_after, files_processed, files_created, attempts, status FROM srdp_compact('lake');
.print -- inlined rows after
SELECT schema_name, table_name, inlined_rows FROM srdp_inlined_row_count('lake');
.print -- row count and checksum after, compared with before
WITH after AS (
  SELECT 'raw.events' AS dataset, count(*) AS row_count, sum(hash(id, kind, amount)) AS checksum FROM lake.raw.events
  UNION ALL SELECT 'raw.users', count(*), sum(hash(id, name)) FROM lake.raw.users)
SELECT a.dataset, a.row_count, a.checksum, a.row_count = b.row_count AND a.checksum = b.checksum AS unchanged
FROM after a JOIN before b USING (dataset) ORDER BY dataset;
SQL

step "6. Loaders keep writing; the nightly job runs once through Dagster (srdp_dataset_maintenance)"
{
  echo "SELECT status FROM srdp_attach_catalog('lake', role := 'writer');"
  for b in $(seq 0 9); do
    echo "INSERT INTO lake.raw.events SELECT 200000 + $b * 10 + range, 'late', range FROM range(10);"
  done
} | duck > /dev/null
echo "(10 more batches of 10 events)"
DAGSTER_HOME= .venv/bin/python scripts/demo_dagster.py

step "7. The whole platform (examples/platform): dlt -> dbt -> IO manager, one asset graph"
DAGSTER_HOME= .venv/bin/python scripts/demo_platform.py

step "Done. The lakes are in demo/: catalog/lake.sqlite and data/lake/, platform/"
