"""Self-tests of test/runner/sqllogictest.py (and of test/conftest.py).

They write tiny .test files to ``tmp_path`` and check that correct files pass
and that wrong files FAIL at the right ``file:line``.  Only core DuckDB SQL
and the ``ducklake`` extension (from ``scripts/install_extensions.py``) are
used, so they pass without the srdp extension being built.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import sqllogictest
from sqllogictest import Runner, SQLLogicTestFailure


def write(tmp_path: Path, text: str, name: str = "t.test") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def fails_at(path: Path, line: int, **runner_kwargs) -> str:
    """Run ``path``, assert it fails at ``path:line``, return the message."""
    with pytest.raises(SQLLogicTestFailure) as excinfo:
        Runner(path, tmp_root=str(path.parent), **runner_kwargs).run()
    message = str(excinfo.value)
    assert message.startswith(f"{path}:{line}: "), message
    assert excinfo.value.line == line
    return message


def test_correct_file_passes(tmp_path):
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
        3
        1
        2

        query RT
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
    Runner(path, tmp_root=str(tmp_path)).run()


def test_wrong_expected_value_fails(tmp_path):
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


def test_wrong_row_count_fails(tmp_path):
    path = write(tmp_path, """
        query I rowsort
        SELECT * FROM range(3)
        ----
        0
        1
    """)
    assert "Actual (3 rows)" in fails_at(path, 1)


def test_wrong_column_count_fails(tmp_path):
    path = write(tmp_path, """
        query I
        SELECT 1, 2
        ----
        1	2
    """)
    assert "2 result columns" in fails_at(path, 1)


def test_wrong_error_substring_fails(tmp_path):
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


def test_statement_ok_that_errors_fails(tmp_path):
    path = write(tmp_path, """
        statement ok
        SELECT 1

        statement ok
        SELECT * FROM nope
    """)
    assert "statement failed unexpectedly" in fails_at(path, 4)


def test_statement_error_that_succeeds_fails(tmp_path):
    path = write(tmp_path, """
        statement error
        SELECT 1
    """)
    assert "an error was expected" in fails_at(path, 1)


def test_missing_require_extension_fails(tmp_path):
    path = write(tmp_path, """
        statement ok
        SELECT 1

        require spatial
    """)
    assert "require spatial" in fails_at(path, 4)


def test_require_srdp_missing_file_fails_not_skips(tmp_path):
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


def test_unknown_directive_fails(tmp_path):
    path = write(tmp_path, """
        loop i 0 10
    """)
    assert "unsupported directive" in fails_at(path, 1)


def test_skip_mode_and_test_dir_is_fresh(tmp_path):
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

        query I
        SELECT count(*) FROM glob('__TEST_DIR__/*')
        ----
        1
    """)
    # Runs twice: the second run would see two files if the directory were reused.
    Runner(path, tmp_root=str(tmp_path)).run()
    Runner(path, tmp_root=str(tmp_path)).run()
    assert [p.name for p in tmp_path.iterdir()] == ["t.test"]  # removed after passing


def test_working_directory_is_repo_root(tmp_path):
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
    Runner(path, tmp_root=str(tmp_path)).run()


def test_pytest_reports_file_and_line(tmp_path):
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


def test_repo_root_points_at_this_repo():
    assert os.path.isfile(os.path.join(sqllogictest.REPO_ROOT, "pytest.ini"))
