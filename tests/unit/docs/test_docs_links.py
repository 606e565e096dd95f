"""Citations of documents point inside the repository, at pages and sections that exist.

Comments and docstrings in `reconciler/`, `tests/`, `bench/` and `scripts/` cite the project's
documentation as `docs/<page>.md` or `docs/<page>.md#<section>` (docs/README.md). A citation of
a page or section that does not exist, or of a document outside the repository (the design
notes and Connect notes once kept beside it, or a bare `§` section number of one), fails here,
with the file and line of each. The links of the pages, the README and the examples' READMEs
are checked the same way.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs"
SCANNED_DIRS = ("reconciler", "tests", "bench", "scripts")
TEXT_SUFFIXES = {".sh", ".md", ".yaml", ".yml", ".records", ".xml", ".properties", ".toml", ".txt", ".cfg"}
SKIPPED_PARTS = {"__pycache__", ".venv", ".pytest_cache", ".mypy_cache"}

# `docs/<page>.md`, optionally `#<section>`; not the tail of a URL or of another path.
CITATION = re.compile(r"(?<![\w./-])docs/(?P<page>[\w./-]+?\.md)(?:#(?P<anchor>[\w-]+))?")
# Documents outside the repository. Spelled in pieces so this file does not match itself.
OUTSIDE = re.compile("|".join(["design" + r"\.md", "connect-" + "internals", "style" + r"\.md",
                               r"\.\./" + "shared", "shared/" + "docs", "shared/" + "seeds", "\u00a7"]))
MARKDOWN_LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(?P<text>.+?)\s*#*\s*$")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading anchor of a Markdown page (a repeated heading gets `-1`, `-2`… as on GitHub)."""
    found: set[str] = set()
    counts: dict[str, int] = {}
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        match = None if fenced else HEADING.match(line)
        if match is None:
            continue
        base = slug(match.group("text"))
        seen = counts.get(base, 0)
        counts[base] = seen + 1
        found.add(base if seen == 0 else f"{base}-{seen}")
    return found


def scanned_files() -> Iterator[Path]:
    for top in SCANNED_DIRS:
        for path in sorted((ROOT / top).rglob("*")):
            if path.is_file() and not SKIPPED_PARTS.intersection(path.parts) and path != Path(__file__).resolve():
                if path.suffix == ".py" or path.suffix in TEXT_SUFFIXES:
                    yield path
    yield ROOT / "README.md"


def python_prose(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of every comment and docstring of a Python module."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                doc = body[0].value.value
                if isinstance(doc, str):
                    for offset, line in enumerate(doc.splitlines()):
                        yield body[0].lineno + offset, line


def prose(path: Path) -> Iterator[tuple[int, str]]:
    """The lines of a file that may cite a document: comments and docstrings for Python, all
    of it for shell scripts, Markdown, YAML, fixtures and build files."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        yield from python_prose(text)
    else:
        yield from enumerate(text.splitlines(), start=1)


def where(path: Path, line: int) -> str:
    return f"{path.relative_to(ROOT)}:{line}"


def test_the_documentation_pages_exist() -> None:
    pages = {path.name for path in DOCS.glob("*.md")}
    assert {"README.md", "record-formats.md", "state-machine.md", "runtime.md", "compatibility.md",
            "real-components.md"} <= pages


def test_citations_point_at_existing_pages_and_sections() -> None:
    known = {page.name: anchors(page) for page in DOCS.glob("*.md")}
    bad = []
    cited = 0
    for path in scanned_files():
        for line, text in prose(path):
            for match in CITATION.finditer(text):
                cited += 1
                page, anchor = match.group("page"), match.group("anchor")
                if page not in known:
                    bad.append(f"{where(path, line)}: {match.group(0)}: no such page in docs/")
                elif anchor is not None and anchor not in known[page]:
                    bad.append(f"{where(path, line)}: {match.group(0)}: no section #{anchor} in docs/{page}")
    assert cited > 0, "no citation of docs/ found at all: the scan is broken"
    assert not bad, "citations of missing documentation:\n" + "\n".join(bad)


def test_nothing_cites_a_document_outside_the_repository() -> None:
    bad = [
        f"{where(path, line)}: {text.strip()}"
        for path in scanned_files()
        for line, text in prose(path)
        if OUTSIDE.search(text)
    ]
    assert not bad, "cite docs/… instead of documents outside the repository:\n" + "\n".join(bad)


LINKED_PAGES = [*sorted(DOCS.glob("*.md")), ROOT / "README.md", *sorted((ROOT / "examples").glob("**/README.md"))]


@pytest.mark.parametrize("page", LINKED_PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_links_between_pages_resolve(page: Path) -> None:
    bad = []
    for line, text in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        for match in MARKDOWN_LINK.finditer(text):
            target = match.group("target")
            if "://" in target or target.startswith("mailto:"):
                continue
            file_part, _, anchor = target.partition("#")
            linked = (page.parent / file_part).resolve() if file_part else page
            if not linked.exists():
                bad.append(f"{where(page, line)}: {target}: no such file")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                bad.append(f"{where(page, line)}: {target}: no such section")
    assert not bad, "broken links:\n" + "\n".join(bad)


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("Write side: deliberate differences", "write-side-deliberate-differences"),
        ("Characters outside the BMP", "characters-outside-the-bmp"),
        ("`pre_commit` and closing", "pre_commit-and-closing"),
        ("Task-count records", "task-count-records"),
    ],
)
def test_slug_follows_github(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor


def test_the_scan_sees_comments_and_docstrings_only() -> None:
    source = '"""Module doc: docs/a.md."""\nx = "docs/b.md"  # docs/c.md\n\ndef f():\n    """docs/d.md"""\n'
    cited = [match.group("page") for _, text in python_prose(source) for match in CITATION.finditer(text)]
    assert sorted(cited) == ["a.md", "c.md", "d.md"]
    assert not OUTSIDE.search("see docs/runtime.md#one-tick")
    assert OUTSIDE.search("(connect-" + "internals.md \u00a71.3)")
