"""Every ``python -m srdp`` command answers bad input with one clear line naming the file and a
non-zero exit status, never a Python traceback; ``dbt-profile`` emits valid YAML whatever the
``--profile`` / ``--target`` names (or refuses them in one line). Run through the real command
line, a subprocess of this venv's Python, from a temporary folder.

The unreadable file: this suite may run as root, which reads any file; the command then runs
under ``setpriv`` without the capabilities that bypass file permissions.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import PY, write_config

GOOD = """
[catalogs.lake]
metadata = "sqlite:catalog/lake.sqlite"
data_path = "data/"

[catalogs.lake.schemas.curated]
writer = "dbt"
layer = "curated"
"""

# name -> srdp.toml content (None: the kind is made by make_broken)
BROKEN: dict[str, str | None] = {
    "missing": None,
    "directory": None,
    "unreadable": None,
    "empty": "",
    "invalid_toml": "[catalogs.lake\nmetadata = 'x'\n",
    "not_utf8": None,
    "unknown_catalog": "[catalogs.lake.schemas.curated]\nwriter = \"dbt\"\nlayer = \"curated\"\n",
    "no_dbt_schema": "[catalogs.lake]\nmetadata = \"sqlite:catalog/lake.sqlite\"\ndata_path = \"data/\"\n",
}

# The lines each kind gives (dbt-profile), as srdp reads the file; {path} is the absolute path.
DBT_PROFILE_ERRORS = {
    "missing": "srdp dbt-profile: cannot read {path} (from --config): no such file",
    "directory": "srdp dbt-profile: cannot read {path} (from --config): not a file",
    "unreadable": "srdp dbt-profile: cannot read {path} (from --config): Permission denied (os error 13)",
    "empty": "srdp dbt-profile: {path} defines no catalog; define [catalogs.<name>] with a schema whose writer is 'dbt'",
    "invalid_toml": "srdp dbt-profile: {path}:1: key 'catalogs.lake': column 15: unclosed table, expected `]`",
    "not_utf8": "srdp dbt-profile: cannot read {path} (from --config): stream did not contain valid UTF-8",
    "unknown_catalog": "srdp dbt-profile: {path}:1: key 'catalogs.lake.schemas.curated': missing field `metadata`",
    "no_dbt_schema": "srdp dbt-profile: {path} gives 'dbt' no schema",
}

ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def make_broken(work: Path, kind: str) -> Path:
    path = work / "srdp.toml"
    if kind == "missing":
        return path
    if kind == "directory":
        path.mkdir()
    elif kind == "not_utf8":
        path.write_bytes(b"[catalogs.lake]\nmetadata = \"\xff\xfe\"\n")
    elif kind == "unreadable":
        write_config(work, GOOD)
        path.chmod(0)
    else:
        path.write_text(BROKEN[kind] or "")
    return path


def srdp_cli(args: list[str], cwd: Path, env: dict[str, str] | None = None, unprivileged: bool = False) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in ("SRDP_CONFIG",)}
    full.update(env or {})
    prefix: list[str] = []
    if unprivileged and ROOT:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: an unreadable file is readable")
        prefix = [setpriv, "--bounding-set=-dac_override,-dac_read_search"]
    return subprocess.run([*prefix, PY, "-m", "srdp", *args], cwd=cwd, env=full, capture_output=True, text=True, timeout=120)


def assert_one_clear_failure(done: subprocess.CompletedProcess[str], path: Path) -> None:
    assert done.returncode != 0, done.stdout
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout, done.stderr
    assert str(path) in done.stderr + done.stdout, done.stderr + done.stdout


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_dbt_profile_names_the_broken_file_in_one_line(tmp_path: Path, kind: str) -> None:
    path = make_broken(tmp_path, kind)
    done = srdp_cli(["dbt-profile", "--config", "srdp.toml"], tmp_path, unprivileged=kind == "unreadable")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == DBT_PROFILE_ERRORS[kind].format(path=path) + "\n"


@pytest.mark.parametrize("kind", sorted(set(BROKEN) - {"no_dbt_schema"}))
@pytest.mark.parametrize("how", ["--config", "SRDP_CONFIG"])
def test_doctor_names_the_broken_file_and_fails(tmp_path: Path, kind: str, how: str) -> None:
    path = make_broken(tmp_path, kind)
    args, env = (["doctor", "--config", "srdp.toml"], None) if how == "--config" else (["doctor"], {"SRDP_CONFIG": str(path)})
    done = srdp_cli(args, tmp_path, env, unprivileged=kind == "unreadable")
    assert_one_clear_failure(done, path)
    assert done.stderr.startswith("srdp doctor: 1 of ")
    (config_line,) = [line for line in done.stdout.splitlines() if line.startswith("FAIL")]
    assert config_line.startswith("FAIL config: ") and str(path) in config_line


@pytest.mark.parametrize("kind", ["missing", "directory", "empty", "not_an_extension", "unreadable"])
@pytest.mark.parametrize("command", ["extension-path", "doctor", "dbt-profile"])
def test_a_broken_srdp_extension_override_is_one_line(tmp_path: Path, kind: str, command: str) -> None:
    write_config(tmp_path, GOOD)
    path = tmp_path / "srdp.duckdb_extension"
    if kind == "directory":
        path.mkdir()
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "not_an_extension":
        path.write_text("not an extension\n")
    elif kind == "unreadable":
        path.write_bytes(b"\0" * 1024)
        path.chmod(0)
    args = {"extension-path": ["extension-path"], "doctor": ["doctor", "--config", "srdp.toml"],
            "dbt-profile": ["dbt-profile", "--config", "srdp.toml"]}[command]
    done = srdp_cli(args, tmp_path, {"SRDP_EXTENSION": str(path)}, unprivileged=kind == "unreadable")
    assert_one_clear_failure(done, path)


@pytest.mark.parametrize("kind", ["missing", "a_file", "empty_folder"])
def test_a_broken_extension_directory_override_is_one_line(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "extensions"
    if kind == "a_file":
        path.write_text("x")
    elif kind == "empty_folder":
        path.mkdir()
    done = srdp_cli(["extension-directory"], tmp_path, {"SRDP_EXTENSION_DIR": str(path)})
    assert_one_clear_failure(done, path)


ODD_NAMES = ["it's", 'say "hi"', "a: b", "two\nlines", "# not a comment", "-dash", "- item", "ünï✓", "x\r\ny",
             "tab\there", "null", "true", "123", "[list]", "{map}", "&anchor", "*alias", "!tag", "%pct", "@at",
             "`tick`", "key: value # c", "trailing ", " leading", "\u2028sep", "\x85nel"]


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("odd_names")
    write_config(work, GOOD)
    return work


def test_dbt_profile_quotes_odd_profile_and_target_names(good: Path) -> None:
    # One process renders every name (a subprocess per name would take minutes); the command line
    # itself is run for a few of them below.
    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from srdp.dbt.profile import render_profile\n"
        "names = json.loads(sys.stdin.read())\n"
        "print(json.dumps([render_profile(Path('srdp.toml'), profile=n, target=n) for n in names]))\n"
    )
    import json

    done = subprocess.run([PY, "-c", script], cwd=good, input=json.dumps(ODD_NAMES), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for name, text in zip(ODD_NAMES, json.loads(done.stdout)):
        loaded = yaml.safe_load(text)
        assert list(loaded) == [name], (name, text)
        assert loaded[name]["target"] == name
        assert list(loaded[name]["outputs"]) == [name]
        assert loaded[name]["outputs"][name]["schema"] == "curated"
        # The header's dbt_project.yml lines stay comments, and their profile: line reads back.
        header = [line for line in text.splitlines() if line.startswith("#   profile: ")]
        assert [yaml.safe_load(line[4:])["profile"] for line in header] == [name]


@pytest.mark.parametrize("name", ["two\nlines", "a: b", "-dash"])
def test_dbt_profile_command_line_emits_yaml_that_reads_back(good: Path, name: str) -> None:
    # --option=value: argparse reads a separate "-dash" as an option (a usage error, exit 2).
    done = srdp_cli(["dbt-profile", "--config", "srdp.toml", f"--profile={name}", f"--target={name}"], good)
    assert (done.returncode, done.stderr) == (0, "")
    loaded = yaml.safe_load(done.stdout)
    assert list(loaded) == [name] and list(loaded[name]["outputs"]) == [name]


@pytest.mark.parametrize("option", ["--profile", "--target"])
@pytest.mark.parametrize("value", ["", "   "])
def test_dbt_profile_refuses_an_empty_name(good: Path, option: str, value: str) -> None:
    done = srdp_cli(["dbt-profile", "--config", "srdp.toml", f"{option}={value}"], good)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"srdp dbt-profile: {option} is empty; give the name dbt should use\n"
