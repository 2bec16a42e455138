"""pytest plugin: every ``test/sql/**/*.test`` file is one test item.

Each sqllogictest file is run by ``test/runner/sqllogictest.py`` (see its
docstring for the supported directives).  The item's name is the file's path
relative to the repo root, so ``-k runner_basics`` selects a file.  A failure
is reported as ``path:line: ...`` with the SQL and the expected/actual
results, without a Python traceback.

Python tests (``test/python/test_*.py``) are collected by pytest as usual;
they can ``import sqllogictest`` because this file puts ``test/runner`` on
``sys.path``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

TEST_DIR = Path(__file__).resolve().parent
SQL_DIR = TEST_DIR / "sql"
sys.path.insert(0, str(TEST_DIR / "runner"))

import sqllogictest  # noqa: E402


def pytest_collect_file(file_path: Path, parent):
    if file_path.suffix == ".test" and SQL_DIR in file_path.resolve().parents:
        return SQLLogicTestFile.from_parent(parent, path=file_path)
    return None


class SQLLogicTestFile(pytest.File):
    def collect(self):
        rel = os.path.relpath(self.path.resolve(), sqllogictest.REPO_ROOT)
        yield SQLLogicTestItem.from_parent(self, name=rel)


class SQLLogicTestItem(pytest.Item):
    def runtest(self):
        sqllogictest.Runner(self.path).run()

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, sqllogictest.SQLLogicTestFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.path, None, f"sqllogictest {self.name}"
