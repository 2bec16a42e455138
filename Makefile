# srdp: build, test and demo. Everything runs offline from a clean clone:
#   make demo   configure, build, and run the demo on examples/srdp.toml
#   make test   configure, build, lint, unit tests, SQL tests, Python tests
.PHONY: all configure python-env debug release test test_release test_debug lint unit sqltest pytest \
        demo bench clean clean_all postgres dist

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
EXT_DIR := .duckdb/extensions
C_API_VERSION := v1.2.0
CRATE_VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
GIT_REV := $(shell git rev-parse --short=10 HEAD 2>/dev/null || echo nogit)
EXT_VERSION := v$(CRATE_VERSION)-$(GIT_REV)

# No telemetry from the Python stack, ever.
export DO_NOT_TRACK := 1
export DBT_SEND_ANONYMOUS_USAGE_STATS := false
export RUNTIME__DLTHUB_TELEMETRY := false

all: release

# --- set-up ---------------------------------------------------------------------------------
# The venv (pins of python/requirements.txt) and the repo-local DuckDB extension directory,
# filled from the PyPI extension wheels. Idempotent: stamps make a second run instant.
configure: python-env postgres

# The venv and the extension directory: all that building, the demo and the benchmarks need.
python-env: $(VENV)/.configured $(EXT_DIR)/.installed

# PostgreSQL server binaries for the tests' throwaway cluster (Debian's package, when missing).
postgres:
	bash scripts/install_postgres.sh

$(VENV)/.configured: python/requirements.txt python/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r python/requirements.txt
	$(PY) -m pip install -q --disable-pip-version-check --no-deps -e ./python
	touch $@

$(EXT_DIR)/.installed: $(VENV)/.configured scripts/install_extensions.py
	$(PY) scripts/install_extensions.py $(EXT_DIR)
	touch $@

# --- build ----------------------------------------------------------------------------------
# cargo builds the cdylib; scripts/append_footer.py appends DuckDB's metadata footer
# (ABI C_STRUCT, C API $(C_API_VERSION), platform from DuckDB's PRAGMA platform).
define package
	mkdir -p build/$(1)
	$(PY) scripts/append_footer.py target/$(1)/libsrdp.so build/$(1)/srdp.duckdb_extension \
	  --platform "$$($(PY) scripts/duckdb_platform.py)" --duckdb-version $(C_API_VERSION) \
	  --extension-version $(EXT_VERSION) --abi-type C_STRUCT
endef

release: python-env
	SRDP_EXTENSION_VERSION=$(EXT_VERSION) cargo build --release
	$(call package,release)

debug: python-env
	SRDP_EXTENSION_VERSION=$(EXT_VERSION) cargo build
	$(call package,debug)

# --- distribution ---------------------------------------------------------------------------
# The platform wheel build/dist/srdp-<version>-py3-none-<platform>.whl (Python package, extension,
# dbt package) and the extension repository build/repository/v1.5.5/<platform>/: srdp.duckdb_extension[.gz]
# and, from the venv's duckdb-extension-* wheels, ducklake, sqlite_scanner, postgres_scanner and httpfs
# (.duckdb_extension[.gz] each), so INSTALL srdp FROM 'file://$(CURDIR)/build/repository' and DuckDB's
# autoinstall from the same folder need nothing else. Offline: the venv's setuptools, no index.
dist: release
	$(PY) scripts/dist.py

# --- tests ----------------------------------------------------------------------------------
test: test_release

test_release: postgres release
	$(MAKE) --no-print-directory lint unit
	SRDP_EXTENSION=$(CURDIR)/build/release/srdp.duckdb_extension $(MAKE) --no-print-directory sqltest pytest

test_debug: postgres debug
	$(MAKE) --no-print-directory lint unit
	SRDP_EXTENSION=$(CURDIR)/build/debug/srdp.duckdb_extension $(MAKE) --no-print-directory sqltest pytest

lint:
	cargo fmt --check
	cargo clippy --release --all-targets -- -D warnings

unit:
	cargo test --release

sqltest:
	$(PY) -m pytest -q test/sql

# Two worker processes (pytest-xdist), each test file whole in one of them: a file's module
# fixtures (servers, dbt projects, lakes) stay in one process. PYTEST_WORKERS=0 runs in-process.
# Tests marked serial (throughput under load) run afterwards, alone, also when a parallel test
# failed (one failure must not hide others); the target then fails with the first failing step's
# status. PYTEST_PATHS: the tests to run (default test/python).
PYTEST_WORKERS ?= 2
PYTEST_PATHS ?= test/python
pytest:
	@status=0; \
	$(PY) -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile -m "not serial" --durations=25 $(PYTEST_PATHS) || status=$$?; \
	$(PY) -m pytest -q -m serial $(PYTEST_PATHS) || { rc=$$?; [ $$status -ne 0 ] || status=$$rc; }; \
	exit $$status

# --- demo and benchmarks --------------------------------------------------------------------
demo: release
	bash scripts/demo.sh

# srdp against the plain DuckLake calls, same run, identical lakes (about 50 minutes in all; see
# bench/README.md; `.venv/bin/python bench/bench.py --datasets 10,100 --files 0` takes about 5).
bench: postgres release
	$(PY) bench/bench.py
	$(PY) bench/bench_pg.py
	$(PY) bench/bench_io.py
	$(PY) bench/bench_partitions.py
	$(PY) bench/bench_unpartitioned.py
	$(PY) bench/bench_history.py
	$(PY) bench/bench_rewrite.py
	$(PY) bench/bench_dlt.py
	$(PY) bench/bench_steady.py
	$(PY) bench/profile_steps.py
	$(PY) bench/profile_steps.py --history --detail 15
	$(PY) bench/bench_health.py
	$(PY) bench/bench_scale.py
	$(PY) bench/load.py --max-retry-seconds 30
	$(PY) bench/load.py --backend postgres --loaders 4 --seconds 30 --max-retry-seconds 30

# --- cleaning -------------------------------------------------------------------------------
clean:
	rm -rf build demo
	cargo clean

clean_all: clean
	rm -rf $(VENV) .duckdb .pytest_cache
