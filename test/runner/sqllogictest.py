"""A runner for DuckDB's sqllogictest dialect, on top of python duckdb.

Usage: ``python test/runner/sqllogictest.py [--lenient] FILE.test ...`` or,
normally, through pytest (``test/conftest.py`` collects ``test/sql/**/*.test``
and runs them strict).

This docstring is the reference for the format srdp's ``.test`` files use.
It is a subset of DuckDB's own format with DuckDB's semantics, so every file
that passes here also runs under DuckDB's runner (``unittest``, or the
``duckdb_sqllogictest`` Python package); where the two differ, this runner is
the stricter one.  On top of DuckDB's rules, **strict mode** (the default; the
only mode pytest uses) holds a file to rules that DuckDB's runner leaves to
the author.  ``--lenient`` (``Runner(strict=False)``) drops them, for foreign
files written for DuckDB's runner.

Layout (as DuckDB parses it)
----------------------------
A file is a sequence of records.  A line starting with ``#`` (in column 1) is
a comment (the ``# name:``, ``# description:``, ``# group:`` header too); an
empty line ends a record.  A comment line also ends the SQL of a record (not
its expected result or message), as in DuckDB.  ``----`` must be exactly that
line.  The one-line directives (``require``, ``restart``, ``load``, ``mode``)
must be followed by an empty line or a comment.  A line holding only
whitespace is not empty: between records it is an error (as in DuckDB), and
strict mode refuses it anywhere.

Records
-------
``require srdp``
    ``LOAD`` the built extension: ``$SRDP_EXTENSION`` or
    ``<repo>/build/release/srdp.duckdb_extension``.  A missing file FAILS.
``require <ext>``
    ``LOAD <ext>`` from the repo-local extension directory
    (``<repo>/.duckdb/extensions``, filled by ``scripts/install_extensions.py``).
    Failure FAILS the test (DuckDB's runner would skip it); nothing is ever
    downloaded.  Required extensions are loaded again after ``restart`` /
    ``load``.
``statement ok``
    The SQL (following lines up to an empty line) must succeed.  A ``----``
    section is an error (as in DuckDB).
``statement error``
    The SQL (up to ``----``) must fail with a DuckDB error (``duckdb.Error``)
    raised while DuckDB executes it.  An internal error
    (``InternalException``, ``FatalException``) never counts, and neither
    does an exception raised by this runner's own Python: both FAIL.  The
    lines after ``----`` up to the next empty line, joined with newlines, are
    the expected message:

    * plain text: a substring of ``str(exception)``;
    * ``<REGEX>:pattern``: ``pattern`` must match the WHOLE message plus a
      trailing newline (``re.fullmatch`` with DOTALL, which is DuckDB's
      ``RE2::FullMatch`` of ``GetError() + "\\n"`` with ``dot_nl``), so write
      ``<REGEX>:.*part.*``;
    * ``<!REGEX>:pattern``: the message must NOT match (lenient mode only).

    Lenient mode, as DuckDB's runner does for SQLite's own files, accepts a
    ``statement error`` without ``----`` or with an empty message: any DuckDB
    error.  Strict mode requires a message, and refuses one that is only an
    error class (``Binder Error``, ``Invalid Input Error:``) or a regex that
    also matches an unrelated message (``<REGEX>:.*Error.*``): name a
    distinctive part of the message itself.
``query <types> [nosort|rowsort|sort|valuesort]``
    ``<types>`` has one letter per result column, each ``I``, ``R`` or ``T``
    (the only letters DuckDB's runner accepts); the column count must match.
    Strict mode also checks each letter against the column's DuckDB type:

    * ``I``: integers (``TINYINT`` .. ``HUGEINT``, ``UTINYINT`` ..
      ``UHUGEINT``, ``BIGNUM``) and ``BOOLEAN`` (DuckDB's runner renders a
      boolean as the integer ``1``/``0`` and SQLite's format has no boolean);
    * ``R``: ``FLOAT``, ``DOUBLE``, ``DECIMAL``;
    * ``T``: everything else: ``VARCHAR``, ``JSON``, ``ENUM``, dates, times,
      timestamps, intervals, ``UUID``, ``BLOB``, ``BIT``, lists, arrays,
      structs, maps, unions.

    The result of INSERT/UPDATE/DELETE/MERGE/COPY/CREATE is its row count
    (``BIGINT``, so ``query I``).  The SQL (up to ``----``) is run and every
    value is rendered by DuckDB's own ``CAST(... AS VARCHAR)`` (doubles,
    dates, lists print as DuckDB prints them; counts go through Python's
    ``str()``); NULL is ``NULL``, booleans ``true``/``false``, the empty
    string ``(empty)``.  The format cannot tell NULL from the string
    ``'NULL'``: where that matters, query ``x IS NULL`` or ``typeof(x)``.

    The expected result is the lines after ``----`` up to an empty line (no
    ``----``, or an empty section: the query must return no rows).  As in
    DuckDB, a block is read row-wise (one row per line, values separated by
    tabs) when the query has more than one column and the block has as many
    lines as the result has rows, or when every line holds a tab; otherwise
    it is one value per line, row-major, and its length must be a multiple
    of the column count.  Values are compared as strings, exactly (DuckDB's
    runner also accepts a numerically equal spelling; this runner does not).

    Sorting, as in DuckDB: ``nosort`` (the default) compares in the order
    returned; ``rowsort`` (alias ``sort``) sorts the result's rows and
    ``valuesort`` all of its values, by their rendered strings, a boolean
    counting as ``1``/``0`` as DuckDB renders it.  Only the RESULT is sorted:
    the expected block must be written in that sorted order.
``mode skip`` / ``mode unskip``
    Ignore every record except ``mode`` between the two (a counter, as in
    DuckDB).  Strict: every ``mode skip`` is closed by a ``mode unskip``, and
    ``mode unskip`` needs an open ``mode skip``.
``restart``
    Close the connection and reopen the database (a fresh in-memory one
    unless ``load`` named a file).
``load <path> [readonly]``
    Reopen the connection on a database file.

Strict mode also fails a file in which no ``statement`` or ``query`` record
runs (none at all, or all inside ``mode skip``).  Anything else (``loop``,
``foreach``, ``halt``, hash results, connection names, query labels, other
``mode``\\ s) is refused, never ignored.

In SQL, expected results and directive arguments ``__TEST_DIR__`` is replaced
by a temporary directory created fresh for each file (removed after a passing
run, kept after a failure) and ``__WORKING_DIRECTORY__`` by the repo root.
Statements run with the repo root as the process working directory.  Any
failure, including an exception raised by this runner's own code, raises
``SQLLogicTestFailure`` whose message starts with ``path:line``.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
import tempfile
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NoReturn

import duckdb

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXTENSION_DIRECTORY = os.path.join(REPO_ROOT, ".duckdb", "extensions")
DEFAULT_SRDP_EXTENSION = os.path.join(REPO_ROOT, "build", "release", "srdp.duckdb_extension")

# Statements whose result (a row count) con.sql() would drop.
COUNT_STATEMENTS = {duckdb.StatementType.INSERT, duckdb.StatementType.UPDATE,
                    duckdb.StatementType.DELETE, duckdb.StatementType.MERGE_INTO,
                    duckdb.StatementType.COPY, duckdb.StatementType.CREATE}

# Strict mode: the type letter of each DuckDB type id (DuckDBPyType.id); any
# other id is T.
TYPE_LETTERS = {
    **dict.fromkeys(["tinyint", "smallint", "integer", "bigint", "hugeint", "utinyint",
                     "usmallint", "uinteger", "ubigint", "uhugeint", "bignum", "boolean"], "I"),
    **dict.fromkeys(["float", "double", "decimal"], "R"),
}
SORT_STYLES = {"nosort": "nosort", "rowsort": "rowsort", "sort": "rowsort",
               "valuesort": "valuesort"}
ONE_LINE_DIRECTIVES = {"require", "restart", "load", "mode"}
# Errors that never count as the expected error of `statement error`.
NEVER_EXPECTED = (duckdb.InternalException, duckdb.FatalException)
# A `statement error` message naming only DuckDB's error class.
ERROR_CLASS_ONLY = re.compile(r"\s*([A-Z][A-Za-z]* )*Error:?\s*")
# Strict: a <REGEX>: that matches one of these accepts errors it does not name.
UNRELATED_ERRORS = [f"{kind} Error: an unrelated message\n" for kind in (
    "Binder", "Catalog", "Constraint", "Conversion", "IO", "Invalid Input", "Not implemented",
    "Out of Range", "Parser", "Permission", "Transaction")]


def connection_config(extension_directory: str = EXTENSION_DIRECTORY) -> dict[str, str]:
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


# -- parsing -------------------------------------------------------------

@dataclass
class Record:
    """One record: ``line`` is the 1-based line of its directive."""

    line: int
    command: str
    args: list[str]
    sql: str = ""
    expected: list[str] = field(default_factory=list)  # lines after ----
    has_dashes: bool = False  # whether a ---- line followed the SQL


def empty_or_comment(line: str) -> bool:
    return line == "" or line.startswith("#")


Fail = Callable[[int, str], NoReturn]


def parse(lines: list[str], strict: bool, fail: Fail) -> list[Record]:
    """The records of a file, read as DuckDB's runner reads them.

    ``fail(line, message)`` raises; it is called for anything this runner
    does not run, or (strict) would not accept.
    """
    records: list[Record] = []
    i, n = 0, len(lines)
    if strict:
        for k, text in enumerate(lines):
            if text and not text.strip():
                fail(k + 1, "a line of only whitespace (DuckDB's runner does not treat it as "
                            "empty): leave it empty")
    while True:
        while i < n and empty_or_comment(lines[i]):
            i += 1
        if i >= n:
            return records
        line = i + 1
        words = lines[i].split()
        if not words:
            fail(line, "a line of only whitespace between records (DuckDB's runner "
                       "fails on it): leave it empty")
        command, args = words[0], words[1:]
        i += 1
        if command in ONE_LINE_DIRECTIVES:
            if i < n and not empty_or_comment(lines[i]):
                fail(line, f"'{command}' must be followed by an empty line")
            records.append(Record(line, command, args))
            continue
        if command not in ("statement", "query"):
            fail(line, f"unsupported directive: {lines[line - 1].strip()!r}")
        sql_lines = []
        while i < n and not empty_or_comment(lines[i]) and lines[i] != "----":
            sql_lines.append(lines[i])
            i += 1
        record = Record(line, command, args, sql="\n".join(sql_lines))
        if i < n and lines[i] == "----":
            record.has_dashes = True
            i += 1
            while i < n and lines[i] != "":
                record.expected.append(lines[i])
                i += 1
        if not sql_lines:
            fail(line, f"{command} without SQL")
        if command == "statement":
            check_statement(record, strict, fail)
        else:
            check_query(record, fail)
        records.append(record)


def check_statement(record: Record, strict: bool, fail: Fail) -> None:
    line, args = record.line, record.args
    if args not in (["ok"], ["error"]):
        fail(line, f"expected 'statement ok' or 'statement error': "
                   f"{' '.join(['statement', *args])!r}")
    if args == ["ok"]:
        if record.has_dashes:
            fail(line, "'statement ok' cannot have a ---- section")
        return
    message = "\n".join(record.expected)
    if not strict:
        return
    if not record.has_dashes or not message.strip():
        fail(line, "'statement error' names no expected message: add a ---- line and a "
                   "distinctive part of the error text")
    if message.startswith("<!REGEX>:"):
        fail(line, "'statement error' with <!REGEX>: accepts any other error: name the "
                   "expected message")
    if ERROR_CLASS_ONLY.fullmatch(message):
        fail(line, f"'statement error' expects only the error class {message.strip()!r}: "
                   "name a distinctive part of the message itself")
    if message.startswith("<REGEX>:"):
        try:
            pattern = re.compile(message[len("<REGEX>:"):], re.DOTALL)
        except re.error as e:
            fail(line, f"invalid regular expression in {message!r}: {e}")
        if any(pattern.fullmatch(m) for m in UNRELATED_ERRORS):
            fail(line, f"'statement error' {message!r} also matches an unrelated error: "
                       "name a distinctive part of the message")


def check_query(record: Record, fail: Fail) -> None:
    line, args = record.line, record.args
    if not args:
        fail(line, "query requires its column types (query III)")
    bad = sorted(set(args[0]) - set("ITR"))
    if bad:
        fail(line, f"unknown type letter(s) {''.join(bad)!r} in {args[0]!r}: "
                   "DuckDB's runner accepts I, R and T only")
    if len(args) > 2 or (len(args) == 2 and args[1] not in SORT_STYLES):
        fail(line, f"expected 'query <types> [nosort|rowsort|valuesort]' (connection names "
                   f"and labels are not supported): {' '.join(['query', *args])!r}")


# -- results -------------------------------------------------------------

def render(value: object) -> str:
    """One value as sqllogictest prints it (values of SELECTs arrive as VARCHAR)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    return "(empty)" if value == "" else str(value)


def type_letter(type_id: str) -> str:
    return TYPE_LETTERS.get(type_id, "T")


def sort_key(value: str, type_id: str) -> str:
    """A rendered value as DuckDB's runner sorts it (booleans as 1/0)."""
    if type_id == "boolean" and value in ("true", "false"):
        return "1" if value == "true" else "0"
    return value


def expected_rows(expected: list[str], ncols: int, nrows: int) -> list[list[str]] | str:
    """The expected block as rows, read as DuckDB reads it, or why it cannot be."""
    row_wise = (ncols > 1 and len(expected) == nrows) or all("\t" in v for v in expected)
    if row_wise:
        return [v.split("\t") for v in expected]
    if len(expected) % ncols:
        return (f"the expected block has {len(expected)} values, one per line, which is "
                f"not a multiple of the {ncols} columns")
    return [expected[k:k + ncols] for k in range(0, len(expected), ncols)]


def format_rows(rows: list[list[str]]) -> str:
    return "\n".join("\t".join(r) for r in rows) if rows else "(no rows)"


def error_matches(expected: str, message: str) -> bool:
    """Whether an error message satisfies ``statement error`` (DuckDB's rule)."""
    if expected in message:
        return True
    for prefix, want in (("<REGEX>:", True), ("<!REGEX>:", False)):
        if expected.startswith(prefix):
            matched = re.fullmatch(expected[len(prefix):], message + "\n", re.DOTALL)
            return (matched is not None) == want
    return False


# -- running -------------------------------------------------------------

class Runner:
    """Runs one .test file; ``run()`` raises ``SQLLogicTestFailure`` on failure."""

    def __init__(self, path: str | os.PathLike[str], repo_root: str = REPO_ROOT,
                 extension_directory: str = EXTENSION_DIRECTORY,
                 srdp_extension: str | None = None, tmp_root: str | None = None,
                 strict: bool = True):
        self.path = os.path.abspath(path)
        self.repo_root = repo_root
        rel = os.path.relpath(self.path, repo_root)
        self.display = str(path) if rel.startswith("..") else rel
        self.config = connection_config(extension_directory)
        self.srdp_extension = os.path.abspath(
            srdp_extension or os.environ.get("SRDP_EXTENSION") or DEFAULT_SRDP_EXTENSION)
        with open(self.path, encoding="utf-8") as f:
            self.lines = f.read().replace("\r", "").split("\n")
        self.strict = strict
        self.tmp_root = tmp_root  # parent of __TEST_DIR__ (None: the system temp dir)
        self.test_dir = ""
        self.db_path, self.read_only = ":memory:", False
        self.required: list[tuple[int, str]] = []  # (line, extension), reloaded on reconnect
        self.con: duckdb.DuckDBPyConnection | None = None
        self.current_line = 1

    # -- helpers ---------------------------------------------------------
    def fail(self, line: int, message: str) -> NoReturn:
        raise SQLLogicTestFailure(self.display, line, message)

    def subst(self, text: str) -> str:
        return (text.replace("__TEST_DIR__", self.test_dir)
                    .replace("__WORKING_DIRECTORY__", self.repo_root))

    def connect(self, line: int) -> None:
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

    def load_extension(self, line: int, ext: str) -> None:
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
    def execute_statement(self, sql: str) -> None:
        """Run a statement to its end (its rows are fetched and dropped)."""
        self.con.execute(sql).fetchall()

    def statement(self, line: int, expect_error: bool, sql: str, expected: str) -> None:
        # Only an error DuckDB raises counts; anything else this code raises
        # propagates and run() reports it as a failure of the runner.
        try:
            self.execute_statement(sql)
        except duckdb.Error as e:
            if not expect_error:
                self.fail(line, f"statement failed unexpectedly\nSQL:\n{sql}\nError:\n{e}")
            if isinstance(e, NEVER_EXPECTED):
                self.fail(line, f"statement failed with an internal error, which never "
                                f"counts as the expected error\nSQL:\n{sql}\nError:\n{e}")
            try:
                ok = not expected or error_matches(expected, str(e))
            except re.error as regex_error:
                self.fail(line, f"invalid regular expression in {expected!r}: {regex_error}")
            if not ok:
                self.fail(line, f"statement failed with the wrong error\nSQL:\n{sql}\n"
                                f"Expected error containing:\n{expected}\nActual error:\n{e}")
            return
        if expect_error:
            self.fail(line, f"statement succeeded but an error was expected\nSQL:\n{sql}"
                      + (f"\nExpected error containing:\n{expected}" if expected else ""))

    def execute_query(self, line: int, sql: str) -> tuple[list[str], list[list[str]]]:
        """(DuckDB type ids, rendered rows) of a query's result."""
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
                types = [d[1].id for d in cur.description or ()]
            else:
                rel = self.con.sql(sql)
                if rel is None:
                    return [], []
                types = [t.id for t in rel.types]
                casts = ", ".join(f"CAST(#{k + 1} AS VARCHAR)" for k in range(len(types)))
                rows = rel.project(casts).fetchall()
        except duckdb.Error as e:
            self.fail(line, f"query failed\nSQL:\n{sql}\nError:\n{e}")
        return types, [[render(v) for v in row] for row in rows]

    def query(self, line: int, letters: str, sort: str, sql: str, expected: list[str]) -> None:
        types, actual = self.execute_query(line, sql)
        ncols = len(types)
        if ncols != len(letters):
            self.fail(line, f"query has {ncols} result columns but types {letters!r} "
                            f"declare {len(letters)}\nSQL:\n{sql}")
        if self.strict:
            wanted = "".join(type_letter(t) for t in types)
            if wanted != letters:
                self.fail(line, f"query types {letters!r} do not match the result types "
                                f"({', '.join(t.upper() for t in types)}): write "
                                f"'query {wanted}'\nSQL:\n{sql}")
        exp = expected_rows(expected, ncols, len(actual))
        if isinstance(exp, str):
            self.fail(line, f"{exp}\nSQL:\n{sql}\nActual ({len(actual)} rows):\n"
                            f"{format_rows(actual)}")
        if sort == "rowsort":
            actual.sort(key=lambda row: [sort_key(v, t) for v, t in zip(row, types)])
        elif sort == "valuesort":
            actual = [[v] for v, _ in sorted(((v, t) for r in actual for v, t in zip(r, types)),
                                              key=lambda vt: sort_key(*vt))]
            exp = [[v] for r in exp for v in r]
        if actual == exp:
            return
        hint = ""
        if sort != "nosort" and sorted(actual) == sorted(exp):
            hint = ("\nThe expected values are right but not in sorted order: DuckDB's runner "
                    f"sorts only the result under {sort}, so list them as 'Actual' does.")
        self.fail(line, f"query result mismatch ({sort})\nSQL:\n{sql}\n"
                        f"Expected ({len(exp)} rows):\n{format_rows(exp)}\n"
                        f"Actual ({len(actual)} rows):\n{format_rows(actual)}{hint}")

    # -- driver ----------------------------------------------------------
    def run(self) -> None:
        ok = False
        try:
            records = parse(self.lines, self.strict, self.fail)
            self.test_dir = tempfile.mkdtemp(prefix="srdp-sqllogictest-", dir=self.tmp_root)
            with contextlib.chdir(self.repo_root):
                self.connect(1)
                self.execute_all(records)
            ok = True
        except SQLLogicTestFailure as e:
            raise SQLLogicTestFailure(e.path, e.line, e.message + self.kept()) from None
        except Exception as e:  # a defect of this runner: never a pass
            raise SQLLogicTestFailure(
                self.display, self.current_line,
                f"the runner itself raised {type(e).__name__}: {e}\n"
                f"{traceback.format_exc().rstrip()}{self.kept()}") from e
        finally:
            if self.con is not None:
                self.con.close()
                self.con = None
            if ok:
                shutil.rmtree(self.test_dir, ignore_errors=True)

    def kept(self) -> str:
        return f"\n(__TEST_DIR__ kept: {self.test_dir})" if self.test_dir else ""

    def execute_all(self, records: list[Record]) -> None:
        skip_level, open_skips, ran = 0, [], 0
        for record in records:
            self.current_line = line = record.line
            args = [self.subst(a) for a in record.args]
            if record.command == "mode":
                if args == ["skip"]:
                    skip_level += 1
                    open_skips.append(line)
                elif args == ["unskip"]:
                    if self.strict and not open_skips:
                        self.fail(line, "'mode unskip' without an open 'mode skip'")
                    skip_level -= 1
                    if open_skips:
                        open_skips.pop()
                else:
                    self.fail(line, f"unsupported: 'mode {' '.join(args)}'")
                continue
            if skip_level > 0:
                continue
            if record.command == "statement":
                ran += 1
                self.statement(line, args == ["error"], self.subst(record.sql),
                               self.subst("\n".join(record.expected)))
            elif record.command == "query":
                ran += 1
                self.query(line, args[0], SORT_STYLES[args[1]] if len(args) > 1 else "nosort",
                           self.subst(record.sql), [self.subst(e) for e in record.expected])
            elif record.command == "require":
                if len(args) != 1:
                    self.fail(line, f"expected 'require <extension>': {args!r}")
                self.required.append((line, args[0]))
                self.load_extension(line, args[0])
            elif record.command == "restart":
                if args:
                    self.fail(line, f"'restart' takes no arguments here: {args!r}")
                self.connect(line)
            elif record.command == "load":
                if not args or len(args) > 2 or args[1:] not in ([], ["readonly"]):
                    self.fail(line, f"expected 'load <path> [readonly]': {args!r}")
                self.db_path, self.read_only = args[0], args[1:] == ["readonly"]
                self.connect(line)
        if self.strict and open_skips:
            self.fail(open_skips[0], "'mode skip' is never closed by 'mode unskip': the rest "
                                     "of the file would be skipped silently")
        if self.strict and not ran:
            self.fail(1, "no statement or query record runs in this file: it checks nothing")


def main(argv: list[str]) -> int:
    strict = "--lenient" not in argv[1:]
    paths = [a for a in argv[1:] if a != "--lenient"]
    status = 0
    for path in paths:
        try:
            Runner(path, strict=strict).run()
            print(f"PASS {path}")
        except SQLLogicTestFailure as e:
            print(f"FAIL {e}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
