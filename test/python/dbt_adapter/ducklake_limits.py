"""What DuckLake 1.0 (DuckDB 1.5.5, ducklake d8a1881e) refuses that dbt's adapter suite asks of it.

Each limit is one statement and DuckLake's own error text, as plain DuckDB + DuckLake (no srdp,
no dbt) answers it on a lake with a table ``t (id INTEGER, name VARCHAR)`` and a view ``v``
over it. ``test_dbt_ducklake_limits.py`` runs every statement and matches the text, and the
suite's conftest names the limit and its text in the reason of each strict xfail that fails on
it, so a DuckLake release that lifts a limit fails both.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["LIMITS", "SETUP", "Limit"]


class Limit(NamedTuple):
    """A statement DuckLake refuses and the error it raises (exception class: message)."""

    what: str
    sql: str
    error: str


#: The lake's objects the statements refer to (run first, in the lake).
SETUP = (
    "CREATE TABLE t (id INTEGER, name VARCHAR)",
    "INSERT INTO t VALUES (1, 'a'), (2, 'b')",
    "CREATE VIEW v AS SELECT * FROM t",
)

LIMITS: dict[str, Limit] = {
    "primary_key": Limit(
        "no PRIMARY KEY or UNIQUE constraints",
        "CREATE TABLE pk (id INTEGER PRIMARY KEY)",
        "NotImplementedException: Not implemented Error: PRIMARY KEY/UNIQUE constraints are not supported in DuckLake",
    ),
    "check": Limit(
        "no CHECK constraints",
        "CREATE TABLE ck (id INTEGER CHECK (id > 0))",
        "NotImplementedException: Not implemented Error: CHECK constraints are not supported in DuckLake",
    ),
    "merge_returning": Limit(
        "no RETURNING on MERGE",
        "MERGE INTO t USING (SELECT 1 AS id, 'z' AS name) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET name = s.name RETURNING *",
        "NotImplementedException: Not implemented Error: RETURNING is not implemented for DuckLake yet",
    ),
    "merge_actions": Limit(
        "one UPDATE or DELETE action per MERGE",
        "MERGE INTO t USING (SELECT 1 AS id, 'z' AS name) s ON t.id = s.id "
        "WHEN MATCHED AND s.name = 'Manager' THEN DELETE WHEN MATCHED THEN UPDATE SET name = s.name",
        "NotImplementedException: Not implemented Error: MERGE INTO with DuckLake only supports a single "
        "UPDATE/DELETE action currently",
    ),
    "view_column_comment": Limit(
        "no comments on a view's columns",
        "COMMENT ON COLUMN v.id IS 'the id'",
        "BinderException: Binder Error: Cannot comment on columns for entry v - it is not a table",
    ),
    "cascade": Limit(
        "no DROP ... CASCADE",
        "DROP TABLE t CASCADE",
        "NotImplementedException: Not implemented Error: Cascade Drop not supported in DuckLake",
    ),
}
