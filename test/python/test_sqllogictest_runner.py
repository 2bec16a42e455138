"""Self-tests of test/runner/sqllogictest.py (and of test/conftest.py).

They write tiny .test files to ``tmp_path`` and check that correct files pass
and that wrong files FAIL at the right ``file:line`` with the right reason.
Only core DuckDB SQL and the ``ducklake`` extension (from
``scripts/install_extensions.py``) are used, so they pass without the srdp
extension being built.  Runs are strict (the default) unless a test says
``strict=False`` (DuckDB's own semantics, for foreign files).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import sqllogictest
from sqllogictest import Runner, SQLLogicTestFailure


def write(tmp_path: Path, text: str, name: str = "t.test") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def passes(path: Path, **runner_kwargs: Any) -> None:
    Runner(path, tmp_root=str(path.parent), **runner_kwargs).run()


def fails_at(path: Path, line: int, **runner_kwargs: Any) -> str:
    """Run ``path``, assert it fails at ``path:line``, return the message."""
    with pytest.raises(SQLLogicTestFailure) as excinfo:
        Runner(path, tmp_root=str(path.parent), **runner_kwargs).run()
    message = str(excinfo.value)
    assert message.startswith(f"{path}:{line}: "), message
    assert excinfo.value.line == line
    return message


# -- files that pass ------------------------------------------------------

def test_correct_file_passes(tmp_path: Path) -> None:
    path = write(tmp_path, """
        # name: ok.test
        # group: [selftest]

        require ducklake

        statement ok
        CREATE TABLE t AS SELECT * FROM (VALUES (2, 'b'), (1, NULL), (3, '')) v(i, s)

        query IT rowsort
        SELECT i, s FROM t
        ----
        1	NULL
        2	b
        3	(empty)

        query I valuesort
        SELECT i FROM t
        ----
        1
        2
        3

        query RI
        SELECT 0.5::DOUBLE, true
        ----
        0.5	true

        query I
        UPDATE t SET s = 'z' WHERE i > 1
        ----
        2

        query T
        UPDATE t SET s = 'y' WHERE i = 3 RETURNING s
        ----
        y

        query I
        CALL range(2)
        ----
        0
        1

        statement error
        SELECT * FROM nope
        ----
        Table with name nope does not exist

        statement ok
        ATTACH 'ducklake:sqlite:__TEST_DIR__/c.sqlite' AS lake (DATA_PATH '__TEST_DIR__/data/')

        statement ok
        CREATE TABLE lake.x AS SELECT 42 AS v

        restart

        statement ok
        ATTACH 'ducklake:sqlite:__TEST_DIR__/c.sqlite' AS lake (DATA_PATH '__TEST_DIR__/data/')

        query I
        SELECT v FROM lake.x
        ----
        42
    """)
    passes(path)


def test_type_letters_of_every_kind_of_type_pass(tmp_path: Path) -> None:
    """The strict mapping: I integers and BOOLEAN, R FLOAT/DOUBLE/DECIMAL, T the rest."""
    path = write(tmp_path, """
        query IIIIIIIIIIII
        SELECT 1::TINYINT, 1::SMALLINT, 1::INTEGER, 1::BIGINT, 1::HUGEINT, 1::UTINYINT,
               1::USMALLINT, 1::UINTEGER, 1::UBIGINT, 1::UHUGEINT, 1::BIGNUM, true
        ----
        1	1	1	1	1	1	1	1	1	1	1	true

        query RRR
        SELECT 0.5::FLOAT, 0.5::DOUBLE, 0.5::DECIMAL(3, 1)
        ----
        0.5	0.5	0.5

        query TTTTTTTTT
        SELECT 'x', DATE '2024-01-31', TIMESTAMP '2024-01-31 10:00:00', TIME '10:00:00',
               INTERVAL 1 DAY, [1, 2], {'k': 1}, 'a'::BLOB,
               '00000000-0000-0000-0000-000000000001'::UUID
        ----
        x	2024-01-31	2024-01-31 10:00:00	10:00:00	1 day	[1, 2]	{'k': 1}	a	00000000-0000-0000-0000-000000000001

        query TT
        SELECT MAP([1], [2]), 'a'::ENUM('a', 'b')
        ----
        {1=2}	a

        query I
        CREATE TABLE c AS SELECT * FROM range(3)
        ----
        3
    """)
    passes(path)


def test_one_value_per_line_form(tmp_path: Path) -> None:
    path = write(tmp_path, """
        query IT
        SELECT * FROM (VALUES (1, 'a'), (2, 'b')) v(i, s) ORDER BY i
        ----
        1
        a
        2
        b

        query II valuesort
        SELECT i, i * 10 FROM range(1, 4) r(i)
        ----
        1
        10
        2
        20
        3
        30
    """)
    passes(path)
    path.write_text(path.read_text().replace("2\nb\n", "2\nc\n"))
    message = fails_at(path, 1)
    assert "Expected (2 rows):\n1\ta\n2\tc" in message, message
    path.write_text(path.read_text().replace("2\nc\n", "2\n"))
    assert "3 values, one per line, which is not a multiple of the 2 columns" in fails_at(path, 1)


def test_lenient_mode_is_duckdbs_semantics(tmp_path: Path) -> None:
    """strict=False: only counted letters, any error, an open skip, no records."""
    path = write(tmp_path, """
        query I
        SELECT 'text'
        ----
        text

        statement error
        SELECT * FROM nope

        statement error
        SELECT * FROM nope
        ----

        statement error
        SELECT * FROM nope
        ----
        <!REGEX>:.*some other message.*

        mode skip

        query I
        SELECT 1
        ----
        2
    """)
    passes(path, strict=False)
    assert "names no expected message" in fails_at(path, 6)  # strict: refused before running
    path.write_text("# only a comment\n")
    passes(path, strict=False)


# -- wrong results ----------------------------------------------------------

def test_wrong_expected_value_fails(tmp_path: Path) -> None:
    path = write(tmp_path, """
        statement ok
        SELECT 1

        query II
        SELECT 1, 2
        ----
        1	3
    """)
    message = fails_at(path, 4)
    assert "query result mismatch" in message
    assert "SELECT 1, 2" in message
    assert "Expected (1 rows):\n1\t3" in message
    assert "Actual (1 rows):\n1\t2" in message


def test_wrong_row_count_fails(tmp_path: Path) -> None:
    path = write(tmp_path, """
        query I rowsort
        SELECT * FROM range(3)
        ----
        0
        1
    """)
    assert "Actual (3 rows)" in fails_at(path, 1)


def test_wrong_column_count_fails(tmp_path: Path) -> None:
    path = write(tmp_path, """
        query I
        SELECT 1, 2
        ----
        1	2
    """)
    assert "2 result columns" in fails_at(path, 1)


def test_wrong_order_under_nosort_fails(tmp_path: Path) -> None:
    path = write(tmp_path, """
        query I
        SELECT * FROM range(3) ORDER BY 1 DESC
        ----
        0
        1
        2
    """)
    message = fails_at(path, 1)
    assert "query result mismatch (nosort)" in message
    assert "Actual (3 rows):\n2\n1\n0" in message


@pytest.mark.parametrize("sort", ["rowsort", "valuesort"])
def test_wrong_values_under_sorting_fail(tmp_path: Path, sort: str) -> None:
    path = write(tmp_path, f"""
        query IT {sort}
        SELECT * FROM (VALUES (2, 'b'), (1, 'a')) v(i, s)
        ----
        1	a
        2	c
    """)
    message = fails_at(path, 1)
    assert f"query result mismatch ({sort})" in message
    assert "not in sorted order" not in message


@pytest.mark.parametrize("sort", ["rowsort", "valuesort"])
def test_sorting_sorts_only_the_result(tmp_path: Path, sort: str) -> None:
    """As in DuckDB's runner: the expected block must be written sorted."""
    path = write(tmp_path, f"""
        query I {sort}
        SELECT * FROM (VALUES (1), (3), (2)) v(i)
        ----
        3
        1
        2
    """)
    message = fails_at(path, 1)
    assert "not in sorted order" in message
    assert "Actual (3 rows):\n1\n2\n3" in message


def test_rowsort_orders_booleans_as_duckdb_renders_them(tmp_path: Path) -> None:
    """DuckDB sorts a boolean as 1/0, so NULL ('NULL') comes after true ('1')."""
    path = write(tmp_path, """
        query I rowsort
        SELECT * FROM (VALUES (NULL), (true), (false)) v(b)
        ----
        false
        true
        NULL
    """)
    passes(path)


def test_wrong_insert_count_fails(tmp_path: Path) -> None:
    path = write(tmp_path, """
        statement ok
        CREATE TABLE t (i INTEGER)

        query I
        INSERT INTO t VALUES (1), (2)
        ----
        1
    """)
    message = fails_at(path, 4)
    assert "Expected (1 rows):\n1\nActual (1 rows):\n2" in message


def test_query_without_dashes_that_returns_rows_fails(tmp_path: Path) -> None:
    path = write(tmp_path, """
        query I
        SELECT 1
    """)
    message = fails_at(path, 1)
    assert "Expected (0 rows):\n(no rows)\nActual (1 rows):\n1" in message


def test_query_without_rows_passes(tmp_path: Path) -> None:
    path = write(tmp_path, """
        query I
        SELECT 1 WHERE false

        query I
        SELECT 1 WHERE false
        ----
    """)
    passes(path)


# -- strict: type letters ---------------------------------------------------

@pytest.mark.parametrize(("letters", "sql", "right"), [
    ("I", "SELECT '1'", "T"),
    ("T", "SELECT 1", "I"),
    ("I", "SELECT 1.5::DOUBLE", "R"),
    ("R", "SELECT 1::BIGINT", "I"),
    ("I", "SELECT 1.5", "R"),  # DECIMAL(2,1)
    ("T", "SELECT true", "I"),
    ("I", "SELECT DATE '2024-01-31'", "T"),
    ("IT", "SELECT 1, 2.5::FLOAT", "IR"),
])
def test_type_letters_must_match_result_types(tmp_path: Path, letters: str, sql: str,
                                              right: str) -> None:
    path = write(tmp_path, f"""
        query {letters}
        {sql}
        ----
        x
    """)
    message = fails_at(path, 1)
    assert f"query types {letters!r} do not match the result types" in message
    assert f"write 'query {right}'" in message


def test_type_letter_outside_i_r_t_fails(tmp_path: Path) -> None:
    path = write(tmp_path, """
        query B
        SELECT true
        ----
        true
    """)
    for strict in (True, False):
        assert "DuckDB's runner accepts I, R and T only" in fails_at(path, 1, strict=strict)


# -- strict: statement error names a message ---------------------------------

@pytest.mark.parametrize("block", ["", "----\n"])
def test_statement_error_without_message_fails(tmp_path: Path, block: str) -> None:
    path = write(tmp_path, "statement ok\nSELECT 1\n\nstatement error\nSELECT * FROM nope\n"
                 + block)
    assert "'statement error' names no expected message" in fails_at(path, 4)


@pytest.mark.parametrize("message", ["Catalog Error", "Catalog Error:", "Invalid Input Error"])
def test_statement_error_naming_only_the_error_class_fails(tmp_path: Path,
                                                           message: str) -> None:
    path = write(tmp_path, f"""
        statement error
        SELECT * FROM nope
        ----
        {message}
    """)
    assert "expects only the error class" in fails_at(path, 1)


@pytest.mark.parametrize("regex", [".*", ".*Error.*", ".*Catalog Error.*", "(?s).+"])
def test_regex_matching_unrelated_errors_fails(tmp_path: Path, regex: str) -> None:
    path = write(tmp_path, f"""
        statement error
        SELECT * FROM nope
        ----
        <REGEX>:{regex}
    """)
    assert "also matches an unrelated error" in fails_at(path, 1)
    passes(path, strict=False)


def test_negative_regex_is_not_a_message(tmp_path: Path) -> None:
    path = write(tmp_path, """
        statement error
        SELECT * FROM nope
        ----
        <!REGEX>:.*other.*
    """)
    assert "<!REGEX>: accepts any other error" in fails_at(path, 1)


def test_wrong_error_substring_fails(tmp_path: Path) -> None:
    path = write(tmp_path, """
        # a comment

        statement error
        SELECT * FROM nope
        ----
        some other message
    """)
    message = fails_at(path, 3)
    assert "wrong error" in message
    assert "some other message" in message
    assert "nope does not exist" in message


def test_regex_matches_the_whole_message(tmp_path: Path) -> None:
    """<REGEX>: is DuckDB's RE2::FullMatch of the message and a newline."""
    path = write(tmp_path, """
        statement error
        SELECT * FROM nope
        ----
        <REGEX>:Catalog Error: Table with name nope does not exist!.*
    """)
    passes(path)
    path.write_text(path.read_text().replace("<REGEX>:Catalog Error: ", "<REGEX>:"))
    message = fails_at(path, 1)  # a part of the message is not a full match
    assert "wrong error" in message


def test_regex_mismatch_fails(tmp_path: Path) -> None:
    path = write(tmp_path, """
        statement error
        SELECT * FROM nope
        ----
        <REGEX>:.*Table with name [0-9]+ does not exist.*
    """)
    message = fails_at(path, 1)
    assert "wrong error" in message
    assert "Table with name nope does not exist" in message


def test_invalid_regex_fails(tmp_path: Path) -> None:
    path = write(tmp_path, """
        statement error
        SELECT * FROM nope
        ----
        <REGEX>:(unclosed
    """)
    assert "invalid regular expression" in fails_at(path, 1)


def test_statement_ok_that_errors_fails(tmp_path: Path) -> None:
    path = write(tmp_path, """
        statement ok
        SELECT 1

        statement ok
        SELECT * FROM nope
    """)
    assert "statement failed unexpectedly" in fails_at(path, 4)


def test_statement_ok_with_dashes_fails(tmp_path: Path) -> None:
    path = write(tmp_path, """
        statement ok
        SELECT 1
        ----
        1
    """)
    for strict in (True, False):
        assert "'statement ok' cannot have a ---- section" in fails_at(path, 1, strict=strict)


def test_statement_error_that_succeeds_fails(tmp_path: Path) -> None:
    path = write(tmp_path, """
        statement error
        SELECT 1
        ----
        some message
    """)
    assert "an error was expected" in fails_at(path, 1)


# -- strict: the runner's own exceptions --------------------------------------

class StatementBug(Runner):
    """A runner whose own Python fails while running a statement."""

    def execute_statement(self, sql: str) -> None:
        raise TypeError("a bug in the runner: nope does not exist")


class RenderingBug(Runner):
    """A runner whose own Python fails while rendering a query's result."""

    def execute_query(self, line: int, sql: str) -> tuple[list[str], list[list[str]]]:
        types, rows = super().execute_query(line, sql)
        raise TypeError(f"a bug in the runner rendering {rows}")


@pytest.mark.parametrize("strict", [True, False])
def test_runner_exception_never_satisfies_statement_error(tmp_path: Path,
                                                          strict: bool) -> None:
    path = write(tmp_path, """
        statement error
        SELECT * FROM nope
        ----
        nope does not exist
    """)
    passes(path, strict=strict)  # the real runner: DuckDB's error, as expected
    with pytest.raises(SQLLogicTestFailure) as excinfo:
        StatementBug(path, tmp_root=str(tmp_path), strict=strict).run()
    assert excinfo.value.line == 1
    assert "the runner itself raised TypeError: a bug in the runner" in str(excinfo.value)


def test_runner_exception_in_a_query_fails_at_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, """
        statement ok
        SELECT 1

        query I
        SELECT 1
        ----
        1
    """)
    with pytest.raises(SQLLogicTestFailure) as excinfo:
        RenderingBug(path, tmp_root=str(tmp_path)).run()
    assert excinfo.value.line == 4
    assert "the runner itself raised TypeError: a bug in the runner rendering" in str(excinfo.value)
    assert "Traceback" in str(excinfo.value)


# -- strict: mode skip is closed ---------------------------------------------

def test_skip_mode_and_test_dir_is_fresh(tmp_path: Path) -> None:
    path = write(tmp_path, """
        mode skip

        query I
        SELECT 'never run'
        ----
        wrong

        mode unskip

        statement ok
        COPY (SELECT 1 AS one) TO '__TEST_DIR__/one.csv'

        statement error
        COPY (SELECT 1 AS one) TO '__TEST_DIR__/missing/dir/one.csv'
        ----
        __TEST_DIR__/missing/dir/one.csv

        query I
        SELECT count(*) FROM glob('__TEST_DIR__/*')
        ----
        1
    """)
    # Runs twice: the second run would see two files if the directory were reused.
    passes(path)
    passes(path)
    assert [p.name for p in tmp_path.iterdir()] == ["t.test"]  # removed after passing


def test_unclosed_mode_skip_fails(tmp_path: Path) -> None:
    path = write(tmp_path, """
        query I
        SELECT 1
        ----
        1

        mode skip

        query I
        SELECT 1
        ----
        2
    """)
    assert "'mode skip' is never closed" in fails_at(path, 6)


def test_mode_unskip_without_skip_fails(tmp_path: Path) -> None:
    path = write(tmp_path, """
        query I
        SELECT 1
        ----
        1

        mode unskip
    """)
    assert "'mode unskip' without an open 'mode skip'" in fails_at(path, 6)


# -- strict: at least one record -----------------------------------------------

@pytest.mark.parametrize("text", [
    "",
    "# name: empty.test\n# description: nothing\n",
    "require ducklake\n",
    "mode skip\n\nquery I\nSELECT 1\n----\n1\n\nmode unskip\n",
])
def test_file_without_a_record_that_runs_fails(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, text)
    assert "no statement or query record runs" in fails_at(path, 1)


# -- layout ---------------------------------------------------------------------

def test_unknown_directive_fails(tmp_path: Path) -> None:
    path = write(tmp_path, """
        loop i 0 10
    """)
    assert "unsupported directive" in fails_at(path, 1)


def test_one_line_directive_needs_an_empty_line(tmp_path: Path) -> None:
    path = write(tmp_path, """
        restart
        statement ok
        SELECT 1
    """)
    assert "'restart' must be followed by an empty line" in fails_at(path, 1)


def test_whitespace_only_line_fails(tmp_path: Path) -> None:
    path = tmp_path / "t.test"  # (textwrap.dedent would empty the line)
    path.write_text("query I\nSELECT 1\n----\n1\n  \nstatement ok\nSELECT 1\n")
    assert "a line of only whitespace" in fails_at(path, 5)


def test_comment_line_ends_the_sql(tmp_path: Path) -> None:
    """As in DuckDB: '# ...' in column 1 ends a record's SQL."""
    path = write(tmp_path, """
        statement ok
        SELECT 1
        # a comment
        SELECT 2
    """)
    assert "unsupported directive: 'SELECT 2'" in fails_at(path, 4)


def test_unsupported_query_options_fail(tmp_path: Path) -> None:
    path = write(tmp_path, """
        query I con1
        SELECT 1
        ----
        1
    """)
    assert "connection names and labels are not supported" in fails_at(path, 1)


# -- extensions, directories, pytest ---------------------------------------------

def test_missing_require_extension_fails(tmp_path: Path) -> None:
    path = write(tmp_path, """
        statement ok
        SELECT 1

        require spatial
    """)
    assert "require spatial" in fails_at(path, 4)


def test_require_srdp_missing_file_fails_not_skips(tmp_path: Path) -> None:
    path = write(tmp_path, """
        # name: srdp.test

        require srdp

        query I
        SELECT 1
        ----
        1
    """)
    missing = str(tmp_path / "no" / "srdp.duckdb_extension")
    assert missing in fails_at(path, 3, srdp_extension=missing)


def test_working_directory_is_repo_root(tmp_path: Path) -> None:
    path = write(tmp_path, """
        query I
        SELECT count(*) FROM glob('pytest.ini')
        ----
        1

        query I
        SELECT count(*) FROM glob('__WORKING_DIRECTORY__/pytest.ini')
        ----
        1
    """)
    passes(path)


def test_command_line_strict_and_lenient(tmp_path: Path) -> None:
    path = write(tmp_path, """
        query I
        SELECT 'text'
        ----
        text
    """)
    script = Path(sqllogictest.__file__)
    strict = subprocess.run([sys.executable, str(script), str(path)],
                            capture_output=True, text=True, timeout=120)
    assert strict.returncode == 1, strict.stdout + strict.stderr
    assert f"FAIL {path}:1: query types 'I' do not match" in strict.stderr
    lenient = subprocess.run([sys.executable, str(script), "--lenient", str(path)],
                             capture_output=True, text=True, timeout=120)
    assert lenient.returncode == 0, lenient.stdout + lenient.stderr
    assert lenient.stdout == f"PASS {path}\n"


def test_pytest_reports_file_and_line(tmp_path: Path) -> None:
    """The conftest plugin collects a .test file and reports path:line."""
    root = tmp_path / "repo"
    (root / "test" / "runner").mkdir(parents=True)
    (root / "test" / "sql" / "sub").mkdir(parents=True)
    here = Path(__file__).resolve().parent.parent
    shutil.copy(here / "conftest.py", root / "test" / "conftest.py")
    shutil.copy(here / "runner" / "sqllogictest.py", root / "test" / "runner")
    (root / "pytest.ini").write_text("[pytest]\ntestpaths = test\n")
    write(root / "test" / "sql" / "sub", """
        query I
        SELECT 41 + 1
        ----
        42
    """, "good.test")
    write(root / "test" / "sql" / "sub", """
        statement ok
        SELECT 1

        query I
        SELECT 41 + 1
        ----
        43
    """, "bad.test")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=root, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "TMPDIR": str(tmp_path)})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "1 failed, 1 passed" in out, out
    assert "test/sql/sub/bad.test:4: query result mismatch" in out, out
    assert "Traceback" not in out, out


def test_repo_root_points_at_this_repo() -> None:
    assert os.path.isfile(os.path.join(sqllogictest.REPO_ROOT, "pytest.ini"))
