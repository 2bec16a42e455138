"""README.md stays a front page, and every link of README.md and docs/*.md goes somewhere.

* Every relative markdown link or image (``[text](path)``, ``[text](path#anchor)``,
  ``[text](#anchor)``) outside code blocks and code spans names a file or folder that exists,
  relative to the page, and its ``#anchor`` a heading of the linked page, by GitHub's rule:
  the heading's text (markup dropped) lowercased, every character but letters, digits, ``-``,
  ``_`` and spaces dropped, each space turned into ``-``; a repeated heading gets ``-1``, ``-2``.
* README.md is under ``README_LIMIT`` bytes (the reference lives in docs/), and its
  Documentation list links every page under docs/.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import REPO

README = REPO / "README.md"
README_LIMIT = 15_000
PAGES = [README, *sorted((REPO / "docs").rglob("*.md"))]
LINK = re.compile(r"!?\[(?P<text>(?:[^\[\]]|\[[^\[\]]*\])*)\]\((?P<target><[^>]*>|[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)"
                  r"(?:\s+\"[^\"]*\")?\)")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # https:, mailto:, ...


CODE_SPAN = re.compile(r"(`+)((?:(?!\1).)+?)\1")


def prose(path: Path) -> list[tuple[int, str, str]]:
    """The lines of ``path`` outside fenced code blocks: number (1-based), the line, and the line
    with its code spans blanked."""
    lines, fence = [], None
    for number, line in enumerate(path.read_text().splitlines(), 1):
        opening = re.match(r"^\s*(`{3,}|~{3,})", line)
        if fence is None and opening:
            fence = opening[1]
        elif fence is not None:
            if line.strip().startswith(fence):
                fence = None
        else:
            lines.append((number, line, CODE_SPAN.sub(lambda m: " " * len(m[0]), line)))
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor of a heading's text."""
    parts = CODE_SPAN.split(heading)  # text, fence, code, fence, code, ..., text
    text = "".join(part if i % 3 == 2 else re.sub(r"<[^>]+>", "", re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", part))
                   for i, part in enumerate(parts) if i % 3 != 1)  # a link's text; HTML tags only outside code
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor the headings of ``path`` give (``#`` headings outside code blocks)."""
    found, counts = set(), {}
    for _, line, _ in prose(path):
        heading = re.match(r"^#{1,6}\s+(.*?)(?:\s+#+)?\s*$", line)
        if heading is not None:
            base = slug(heading[1])
            n = counts.get(base, 0)
            found.add(f"{base}-{n}" if n else base)
            counts[base] = n + 1
    return found


def links(path: Path) -> list[tuple[int, str]]:
    """The relative link targets of ``path``, with their line numbers."""
    found = []
    for number, _, line in prose(path):
        for match in LINK.finditer(line):
            target = match["target"].strip("<>")
            if target and not EXTERNAL.match(target):
                found.append((number, target))
    return found


def broken_links(page: Path) -> list[str]:
    """One line per relative link of ``page`` whose file or heading does not exist."""
    broken = []
    for number, target in links(page):
        file, _, anchor = target.partition("#")
        linked = (page.parent / file).resolve() if file else page
        where = f"{page.name}:{number}: ({target})"
        if not linked.exists():
            broken.append(f"{where}: no file {file}")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{where}: {linked.name} has no heading with anchor #{anchor}")
    return broken


def test_the_anchor_rule() -> None:
    assert slug("srdp.toml") == "srdptoml"
    assert slug("The IO manager: `SrdpIOManager`") == "the-io-manager-srdpiomanager"
    assert slug("Known DuckLake 1.0 defect: deletes lost to a concurrent merge") == (
        "known-ducklake-10-defect-deletes-lost-to-a-concurrent-merge")
    assert slug("`srdp_flush(catalog, schema_name :=, dry_run := false)`") == "srdp_flushcatalog-schema_name--dry_run--false"
    assert slug("One asset graph: dlt -> dbt -> IO manager") == "one-asset-graph-dlt---dbt---io-manager"
    assert slug("`f(role := '<catalog>_reader')` <b>x</b> [a link](x.md)") == "frole--catalog_reader-x-a-link"


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPO)) for p in PAGES])
def test_every_relative_link_resolves(page: Path) -> None:
    broken = broken_links(page)
    assert not broken, f"{page.relative_to(REPO)}:\n" + "\n".join(broken)


def test_the_readme_stays_a_front_page() -> None:
    size = len(README.read_bytes())
    assert size < README_LIMIT, f"README.md is {size} bytes (limit {README_LIMIT}): move reference text into docs/"


def test_the_readme_links_every_docs_page() -> None:
    linked = {(README.parent / target.partition("#")[0]).resolve() for _, target in links(README)}
    missing = [str(p.relative_to(REPO)) for p in PAGES[1:] if p.resolve() not in linked]
    assert not missing, f"README.md's Documentation list does not link: {', '.join(missing)}"


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Title\n\n## A `code` heading\n\n[ok](#title) [ok](b.md#b-heading)\n"
                                   "[ok](#a-code-heading) `[not a link](nowhere.md)`\n\n```\n[nor this](x.md)\n```\n"
                                   "[bad](missing.md) [bad](b.md#no-such) [bad](#nope) [ext](https://example.com/x#y)\n"
                                   "## Title\n[ok](#title-1)\n")
    (tmp_path / "b.md").write_text("# B heading\n")
    assert links(tmp_path / "a.md") == [(5, "#title"), (5, "b.md#b-heading"), (6, "#a-code-heading"),
                                        (11, "missing.md"), (11, "b.md#no-such"), (11, "#nope"), (13, "#title-1")]
    assert anchors(tmp_path / "a.md") == {"title", "a-code-heading", "title-1"}
    assert broken_links(tmp_path / "a.md") == [
        "a.md:11: (missing.md): no file missing.md",
        "a.md:11: (b.md#no-such): b.md has no heading with anchor #no-such",
        "a.md:11: (#nope): a.md has no heading with anchor #nope",
    ]
