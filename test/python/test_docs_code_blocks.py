"""Every fenced ```sql, ```sh/```bash, ```python and ```toml block of README.md and docs/*.md runs
as written (paths such as ``/abs/srdp/build/repository`` replaced by this test's folders), unless
the line right before its fence says why not: ``<!-- not-run: <reason> -->`` (a fragment, a
command that installs or runs a long-lived service, an example output).

* ``toml``: parsed by tomllib; a complete srdp.toml (it defines ``[catalogs.<name>]`` with
  ``metadata``) is also read by srdp's own validator (``srdp_catalogs()``).
* ``python``: compiled (marked blocks too); unmarked ones run in a fresh process from a folder
  holding ``examples/srdp.toml``'s copy.
* ``sql``: run by the DuckDB 1.5.5 CLI (``duckdb -unsigned -bail``) in a fresh ``HOME``, against
  a demo lake: a block that does not ``LOAD`` srdp itself runs after the README's Install
  snippet (srdp and ducklake & co. from the extension repository ``make dist`` builds).
* ``sh``/``bash``: run by ``bash -euo pipefail`` from that folder, with the venv first on PATH.

The extension repository is built once for the module by ``scripts/dist.py --repository-only``
(no wheel); nothing can be downloaded (the machine is offline, and the SQL sets both repository
settings to that folder).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

import srdp
from conftest import PY, REPO

EXTENSION = Path(os.environ.get("SRDP_EXTENSION") or REPO / "build" / "release" / "srdp.duckdb_extension")
DUCKDB = REPO / ".venv" / "bin" / "duckdb"
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LANGUAGES = {"sql": "sql", "sh": "sh", "bash": "sh", "shell": "sh", "python": "python", "toml": "toml"}
NOT_RUN = re.compile(r"^<!--\s*not-run:\s*(?P<reason>\S.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a document."""

    path: Path
    line: int  # of the opening fence, 1-based
    language: str  # sql, sh, python or toml
    text: str
    not_run: str | None  # the marker's reason

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}:{self.language}"


def blocks(path: Path) -> list[Block]:
    """The blocks of ``path`` in the four languages (fences at the start of a line)."""
    found = []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        opening = re.match(r"^```(\w*)\s*$", lines[i])
        if opening is None:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        language = LANGUAGES.get(opening[1])
        if language is not None:
            marker = NOT_RUN.match(lines[i - 1]) if i > 0 else None
            found.append(Block(path, i + 1, language, "\n".join(lines[i + 1:end]) + "\n",
                               marker["reason"] if marker else None))
        i = end + 1
    return found


ALL = [b for path in DOCS for b in blocks(path)]


@dataclass(frozen=True)
class Env:
    """What the blocks run with: the extension repository, a work folder with the demo
    definition (``examples/srdp.toml``'s copy and its ``demo/`` lake next to it)."""

    repository: Path
    work: Path
    config: Path

    def substitute(self, text: str) -> str:
        for placeholder in ("file:///abs/srdp/build/repository", "file:///path/to/srdp/build/repository"):
            text = text.replace(placeholder, f"file://{self.repository}")
        for placeholder in ("/abs/srdp.toml", "/path/to/srdp.toml"):
            text = text.replace(placeholder, str(self.config))
        text = text.replace("/path/to/srdp/build/release/srdp.duckdb_extension", str(EXTENSION))
        return text.replace("/path/to/srdp/", f"{REPO}/")

    def home(self, name: str) -> Path:
        home = self.work.parent / "homes" / name
        home.mkdir(parents=True)
        return home

    def environ(self, home: Path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SRDP_") and k not in ("DAGSTER_HOME",)}
        env.update(HOME=str(home), PATH=f"{REPO / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}",
                   SRDP_EXTENSION=str(EXTENSION), DO_NOT_TRACK="1", RUNTIME__DLTHUB_TELEMETRY="false")
        return env


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Env:
    root = tmp_path_factory.mktemp("docs")
    repository = root / "repository"
    done = subprocess.run([PY, str(REPO / "scripts" / "dist.py"), "--extension", str(EXTENSION), "--repository",
                           str(repository), "--repository-only"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    work = root / "work"
    (work / "examples").mkdir(parents=True)
    config = work / "examples" / "srdp.toml"
    shutil.copyfile(REPO / "examples" / "srdp.toml", config)
    return Env(repository, work, config)


def install_snippet() -> Block:
    """README's first SQL block: the DuckDB CLI's Install snippet."""
    return next(b for b in ALL if b.path.name == "README.md" and b.language == "sql")


def duckdb_cli(sql: str, env: Env, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(DUCKDB), "-unsigned", "-bail", "-csv"], input=sql, cwd=env.work, env=env.environ(home),
                          capture_output=True, text=True, timeout=300)


def test_the_readme_duckdb_cli_snippet_installs_everything_from_the_repository_offline(env: Env) -> None:
    snippet = install_snippet()
    assert "srdp_attach_catalog('lake'" in snippet.text
    home = env.home("install")
    done = duckdb_cli(env.substitute(snippet.text), env, home)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[:2] == [
        "catalog,alias,role,read_only,metadata_schema,data_path,data_inlining_row_limit,status",
        f"lake,lake,writer,false,main,{env.work / 'demo' / 'data' / 'lake'}/,1000,attached",
    ]
    # srdp, ducklake and sqlite_scanner came from the repository into the fresh HOME.
    listed = duckdb_cli("SELECT extension_name, installed_from FROM duckdb_extensions() WHERE install_mode = 'REPOSITORY' "
                        "ORDER BY 1;", env, home)
    assert listed.stdout.splitlines() == ["extension_name,installed_from",
                                          *(f"{name},file://{env.repository}" for name in ("ducklake", "sqlite_scanner", "srdp"))]
    # A later session of that HOME needs only LOAD srdp.
    later = duckdb_cli(f"LOAD srdp; SET srdp_config = '{env.config}'; "
                       "SELECT status FROM srdp_attach_catalog('lake');", env, home)
    assert (later.returncode, later.stdout) == (0, "status\nattached\n"), later.stderr


@pytest.mark.parametrize("block", ALL, ids=[b.id for b in ALL])
def test_docs_code_block(block: Block, env: Env, tmp_path: Path) -> None:
    if block.language == "python":
        compile(block.text, block.id, "exec")  # marked blocks too
    if block.not_run is not None:
        pytest.skip(f"not-run: {block.not_run}")
    RUNNERS[block.language](block, env, tmp_path)


def run_toml(block: Block, env: Env, tmp_path: Path) -> None:
    parsed = tomllib.loads(block.text)
    complete = any("metadata" in c for c in parsed.get("catalogs", {}).values() if isinstance(c, dict))
    if complete:
        config = tmp_path / "srdp.toml"
        config.write_text(block.text)
        con = srdp.connect(config=config)
        try:
            assert srdp.call(con, "srdp_catalogs"), f"{block.id} defines no catalog"
        finally:
            con.close()


def run_python(block: Block, env: Env, tmp_path: Path) -> None:
    done = subprocess.run([PY, "-c", env.substitute(block.text)], cwd=env.work, env=env.environ(env.home(tmp_path.name)),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{block.id}:\n{done.stdout}\n{done.stderr}"


def run_sql(block: Block, env: Env, tmp_path: Path) -> None:
    sql = env.substitute(block.text)
    if not re.search(r"^\s*LOAD\b", sql, re.MULTILINE | re.IGNORECASE):
        sql = env.substitute(install_snippet().text) + sql
    done = duckdb_cli(sql, env, env.home(tmp_path.name))
    assert done.returncode == 0, f"{block.id}:\n{done.stdout}\n{done.stderr}"


def run_sh(block: Block, env: Env, tmp_path: Path) -> None:
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", env.substitute(block.text)], cwd=env.work,
                          env=env.environ(env.home(tmp_path.name)), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{block.id}:\n{done.stdout}\n{done.stderr}"


RUNNERS = {"toml": run_toml, "python": run_python, "sql": run_sql, "sh": run_sh}


def test_markers_sit_right_before_a_fence() -> None:
    """A not-run marker anywhere else would silently mark nothing."""
    for path in DOCS:
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            if "not-run" in line:
                assert NOT_RUN.match(line) and i + 1 < len(lines) and lines[i + 1].startswith("```"), (
                    f"{path.relative_to(REPO)}:{i + 1}: <!-- not-run: reason --> must be the line right before a fence")


