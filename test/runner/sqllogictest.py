"""A small runner for DuckDB's sqllogictest dialect, on top of python duckdb.

Usage: ``python test/runner/sqllogictest.py FILE.test ...`` or, normally,
through pytest (``test/conftest.py`` collects ``test/sql/**/*.test``).

A file is a sequence of records separated by blank lines.  Supported:

``# ...``
    Comment line between records (``# name:``, ``# description:``,
    ``# group:`` headers are comments too).
``require srdp``
    ``LOAD`` the built extension: ``$SRDP_EXTENSION`` or
    ``<repo>/build/release/srdp.duckdb_extension``.  A missing file FAILS.
``require <ext>``
    ``LOAD <ext>`` from the repo-local extension directory
    (``<repo>/.duckdb/extensions``, filled by ``scripts/install_extensions.py``).
    Failure FAILS the test; nothing is ever skipped or downloaded.
    Required extensions are loaded again after ``restart`` / ``load``.
``statement ok``
    The SQL (following lines up to a blank line) must succeed.
``statement error``
    The SQL (up to a blank line or a ``----`` line) must fail.  Lines after
    ``----`` up to the next blank line, joined with newlines, must be a
    substring of ``str(exception)``; with a ``<REGEX>:`` prefix, a
    ``re.search`` pattern (DOTALL) instead.
``query <types> [nosort|rowsort|valuesort]``
    One type letter per result column (letters are only counted).  The SQL
    (up to ``----`` or a blank line) is run and every value is rendered by
    DuckDB's own ``CAST(... AS VARCHAR)`` (so doubles, dates, lists print as
    DuckDB prints them; the results of INSERT/UPDATE/DELETE/MERGE/COPY/CREATE,
    i.e. counts, go through Python's ``str()``); NULL is ``NULL``, booleans
    ``true``/``false``, the empty string is ``(empty)``.
    Expected rows follow ``----`` up to a blank line, values separated by
    tabs; alternatively one value per line (row-major).  ``rowsort`` sorts
    the rows, ``valuesort`` sorts all values, ``nosort`` (default) compares
    in order.  Comparison is of strings.
``mode skip`` / ``mode unskip``
    Ignore every record (except ``mode``) between the two.
``restart``
    Close the connection and reopen the database (a fresh in-memory one
    unless ``load`` named a file).
``load <path> [readonly]``
    Reopen the connection on a database file.

In SQL and directive arguments ``__TEST_DIR__`` is replaced by a temporary
directory created fresh for each file (removed after a passing run, kept
after a failure) and ``__WORKING_DIRECTORY__`` by the repo root.  Statements
run with the repo root as the process working directory.  Any failure raises
``SQLLogicTestFailure`` whose message starts with ``path:line``.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
import tempfile

import duckdb

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXTENSION_DIRECTORY = os.path.join(REPO_ROOT, ".duckdb", "extensions")
DEFAULT_SRDP_EXTENSION = os.path.join(REPO_ROOT, "build", "release", "srdp.duckdb_extension")

# Statements whose result (a row count) con.sql() would drop.
COUNT_STATEMENTS = {duckdb.StatementType.INSERT, duckdb.StatementType.UPDATE,
                    duckdb.StatementType.DELETE, duckdb.StatementType.MERGE_INTO,
                    duckdb.StatementType.COPY, duckdb.StatementType.CREATE}


def connection_config(extension_directory: str = EXTENSION_DIRECTORY) -> dict:
    """The config of every connection: local extensions only, never download."""
    return {
        "extension_directory": extension_directory,
        "allow_unsigned_extensions": "true",
        "autoinstall_known_extensions": "false",
        "autoload_known_extensions": "true",
    }


class SQLLogicTestFailure(Exception):
    """A failed record; ``str()`` starts with ``path:line``."""

    def __init__(self, path: str, line: int, message: str):
        super().__init__(f"{path}:{line}: {message}")
        self.path, self.line, self.message = path, line, message


def render(value) -> str:
    """One value as sqllogictest prints it (values of SELECTs arrive as VARCHAR)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    return "(empty)" if value == "" else str(value)


def format_rows(rows: list[list[str]]) -> str:
    return "\n".join("\t".join(r) for r in rows) if rows else "(no rows)"


class Runner:
    """Runs one .test file; ``run()`` raises ``SQLLogicTestFailure`` on failure."""

    def __init__(self, path, repo_root: str = REPO_ROOT,
                 extension_directory: str = EXTENSION_DIRECTORY,
                 srdp_extension: str | None = None, tmp_root: str | None = None):
        self.path = os.path.abspath(path)
        self.repo_root = repo_root
        rel = os.path.relpath(self.path, repo_root)
        self.display = str(path) if rel.startswith("..") else rel
        self.config = connection_config(extension_directory)
        self.srdp_extension = os.path.abspath(
            srdp_extension or os.environ.get("SRDP_EXTENSION") or DEFAULT_SRDP_EXTENSION)
        with open(self.path, encoding="utf-8") as f:
            self.lines = f.read().splitlines()
        self.tmp_root = tmp_root  # parent of __TEST_DIR__ (None: the system temp dir)
        self.test_dir = ""
        self.db_path, self.read_only = ":memory:", False
        self.required: list[tuple[int, str]] = []  # (line, extension), reloaded on reconnect
        self.con = None

    # -- helpers ---------------------------------------------------------
    def fail(self, line: int, message: str):
        raise SQLLogicTestFailure(self.display, line, message)

    def subst(self, text: str) -> str:
        return (text.replace("__TEST_DIR__", self.test_dir)
                    .replace("__WORKING_DIRECTORY__", self.repo_root))

    def block(self, i: int, stop_at_dashes: bool) -> tuple[list[str], int]:
        """Lines from index i up to a blank line (or ``----``); returns (lines, next i)."""
        out = []
        while i < len(self.lines) and self.lines[i].strip():
            if stop_at_dashes and self.lines[i].rstrip() == "----":
                break
            out.append(self.lines[i])
            i += 1
        return out, i

    def connect(self, line: int):
        if self.con is not None:
            self.con.close()
            self.con = None
        try:
            self.con = duckdb.connect(self.db_path, read_only=self.read_only,
                                      config=self.config)
        except duckdb.Error as e:
            self.fail(line, f"could not open database {self.db_path!r}: {e}")
        for req_line, ext in self.required:
            self.load_extension(req_line, ext)

    def load_extension(self, line: int, ext: str):
        if ext == "srdp":
            if not os.path.isfile(self.srdp_extension):
                self.fail(line, f"require srdp: {self.srdp_extension} does not exist "
                                "(build it first, or set SRDP_EXTENSION)")
            sql = "LOAD '" + self.srdp_extension.replace("'", "''") + "'"
        else:
            sql = f'LOAD "{ext}"'
        try:
            self.con.execute(sql)
        except duckdb.Error as e:
            hint = "" if ext == "srdp" else (
                f" (extension directory {self.config['extension_directory']}; "
                "run scripts/install_extensions.py?)")
            self.fail(line, f"require {ext}: {sql} failed{hint}:\n{e}")

    # -- records ---------------------------------------------------------
    def statement(self, line: int, expect_error: bool, sql: str, expected: str | None):
        try:
            self.con.execute(sql).fetchall()
        except Exception as e:  # duckdb.Error, or a Python-side error of the client
            if not expect_error:
                self.fail(line, f"statement failed unexpectedly\nSQL:\n{sql}\nError:\n{e}")
            if expected is None:
                return
            if expected.startswith("<REGEX>:"):
                ok = re.search(expected[len("<REGEX>:"):], str(e), re.DOTALL) is not None
            else:
                ok = expected in str(e)
            if not ok:
                self.fail(line, f"statement failed with the wrong error\nSQL:\n{sql}\n"
                                f"Expected error containing:\n{expected}\nActual error:\n{e}")
            return
        if expect_error:
            self.fail(line, f"statement succeeded but an error was expected\nSQL:\n{sql}"
                      + (f"\nExpected error containing:\n{expected}" if expected else ""))

    def query(self, line: int, types: str, sort: str, sql: str, expected: list[str]):
        # Values are rendered by DuckDB (CAST to VARCHAR) so they print exactly
        # as DuckDB prints them.  con.sql() returns a relation for SELECT-like
        # statements (lazy, so it runs once) and CALL/EXPLAIN/RETURNING, but
        # drops the row count of INSERT/UPDATE/DELETE/MERGE/COPY/CREATE, so
        # those run with execute() and their Python values go through str().
        try:
            last = self.con.extract_statements(sql)[-1].type
            if last in COUNT_STATEMENTS:
                cur = self.con.execute(sql)
                rows = cur.fetchall()
                ncols = len(cur.description or ())
            else:
                rel = self.con.sql(sql)
                ncols = len(rel.columns) if rel is not None else 0
                casts = ", ".join(f"CAST(#{i + 1} AS VARCHAR)" for i in range(ncols))
                rows = rel.project(casts).fetchall() if rel is not None else []
        except Exception as e:  # duckdb.Error, or a Python-side error of the client
            self.fail(line, f"query failed\nSQL:\n{sql}\nError:\n{e}")
        actual = [[render(v) for v in row] for row in rows]
        if ncols != len(types):
            self.fail(line, f"query has {ncols} result columns but types {types!r} "
                            f"declare {len(types)}\nSQL:\n{sql}")
        exp = [row.split("\t") for row in expected]
        if (ncols > 1 and exp and all(len(r) == 1 for r in exp)
                and len(exp) == ncols * len(actual)):
            exp = [exp[i:i + ncols] for i in range(0, len(exp), ncols)]  # one value per line
            exp = [[v[0] for v in r] for r in exp]
        if sort == "rowsort":
            actual, exp = sorted(actual), sorted(exp)
        elif sort == "valuesort":
            actual = [[v] for v in sorted(v for r in actual for v in r)]
            exp = [[v] for v in sorted(v for r in exp for v in r)]
        if actual != exp:
            self.fail(line, f"query result mismatch ({sort})\nSQL:\n{sql}\n"
                            f"Expected ({len(exp)} rows):\n{format_rows(exp)}\n"
                            f"Actual ({len(actual)} rows):\n{format_rows(actual)}")

    # -- driver ----------------------------------------------------------
    def run(self):
        self.test_dir = tempfile.mkdtemp(prefix="srdp-sqllogictest-", dir=self.tmp_root)
        ok = False
        try:
            with contextlib.chdir(self.repo_root):
                self.connect(1)
                self.execute_all()
            ok = True
        except SQLLogicTestFailure as e:
            raise SQLLogicTestFailure(e.path, e.line, e.message +
                                      f"\n(__TEST_DIR__ kept: {self.test_dir})") from None
        finally:
            if self.con is not None:
                self.con.close()
                self.con = None
            if ok:
                shutil.rmtree(self.test_dir, ignore_errors=True)

    def execute_all(self):
        i, skipping = 0, False
        while i < len(self.lines):
            raw = self.lines[i]
            if not raw.strip() or raw.lstrip().startswith("#"):
                i += 1
                continue
            line = i + 1  # 1-based line number of the directive
            words = self.subst(raw).split()
            cmd, args = words[0], words[1:]
            i += 1
            if cmd == "mode":
                if args not in (["skip"], ["unskip"]):
                    self.fail(line, f"unsupported: {raw.strip()!r}")
                skipping = args == ["skip"]
            elif cmd == "statement":
                if args not in (["ok"], ["error"]):
                    self.fail(line, f"expected 'statement ok' or 'statement error': {raw!r}")
                sql_lines, i = self.block(i, stop_at_dashes=True)
                expected = None
                if i < len(self.lines) and self.lines[i].rstrip() == "----":
                    if args == ["ok"]:
                        self.fail(line, "'statement ok' cannot have a ---- section")
                    exp_lines, i = self.block(i + 1, stop_at_dashes=False)
                    expected = self.subst("\n".join(exp_lines))
                if not sql_lines:
                    self.fail(line, "statement without SQL")
                if not skipping:
                    self.statement(line, args == ["error"],
                                   self.subst("\n".join(sql_lines)), expected)
            elif cmd == "query":
                if not args or len(args) > 2 or (len(args) == 2 and args[1] not in
                                                 ("nosort", "rowsort", "valuesort")):
                    self.fail(line, f"expected 'query <types> [nosort|rowsort|valuesort]': {raw!r}")
                sql_lines, i = self.block(i, stop_at_dashes=True)
                expected = []
                if i < len(self.lines) and self.lines[i].rstrip() == "----":
                    expected, i = self.block(i + 1, stop_at_dashes=False)
                    expected = [self.subst(e) for e in expected]
                if not sql_lines:
                    self.fail(line, "query without SQL")
                if not skipping:
                    self.query(line, args[0], args[1] if len(args) > 1 else "nosort",
                               self.subst("\n".join(sql_lines)), expected)
            elif skipping:
                continue
            elif cmd == "require":
                if len(args) != 1:
                    self.fail(line, f"expected 'require <extension>': {raw!r}")
                self.required.append((line, args[0]))
                self.load_extension(line, args[0])
            elif cmd == "restart":
                self.connect(line)
            elif cmd == "load":
                if not args or len(args) > 2 or args[1:] not in ([], ["readonly"]):
                    self.fail(line, f"expected 'load <path> [readonly]': {raw!r}")
                self.db_path, self.read_only = args[0], args[1:] == ["readonly"]
                self.connect(line)
            else:
                self.fail(line, f"unsupported directive: {raw.strip()!r}")


def main(argv: list[str]) -> int:
    status = 0
    for path in argv[1:]:
        try:
            Runner(path).run()
            print(f"PASS {path}")
        except SQLLogicTestFailure as e:
            print(f"FAIL {e}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
