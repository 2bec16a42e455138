"""Every dbt project under examples/ and demo/ follows docs/dbt.md: no ``database:``
in models, sources or the project (the lake is the profile's target database), no on-run-start
hooks and no ``srdp_commit_message()`` pre-hook."""

from __future__ import annotations

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def projects() -> list[Path]:
    found = [p.parent for top in ("examples", "demo") for p in (REPO / top).rglob("dbt_project.yml")]
    return sorted(p for p in found if "dbt_packages" not in p.parts)


def offending_lines(project: Path) -> list[str]:
    """Lines of the project's own yml files (not the profile, not installed packages) that
    docs/dbt.md's set-up no longer has."""
    out = []
    for path in sorted(project.rglob("*.yml")):
        if {"dbt_packages", "target", "logs"} & set(path.relative_to(project).parts) or path.name == "profiles.yml":
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            text = line.split("#", 1)[0]
            if any(word in text for word in ("database:", "on-run-start", "srdp_commit_message", "pre-hook")):
                out.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    return out


def test_example_dbt_projects_have_no_database_no_hooks_and_a_lake_target_profile() -> None:
    found = projects()
    assert {p.relative_to(REPO).as_posix() for p in found} >= {"examples/dbt_project", "examples/platform/dbt"}
    assert [line for p in found for line in offending_lines(p)] == []
    for project in found:
        profile = project / "profiles.yml"
        if profile.is_file():
            outputs = next(iter(yaml.safe_load(profile.read_text()).values()))["outputs"]
            assert all(o.get("database") == "lake" for o in outputs.values()), profile
