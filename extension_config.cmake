# DuckDB's extension build system reads this file when srdp is built inside a DuckDB source
# tree. The cargo build (make release / make debug) does NOT read it.
duckdb_extension_load(srdp SOURCE_DIR ${CMAKE_CURRENT_LIST_DIR} LOAD_TESTS)
