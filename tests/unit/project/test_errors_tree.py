"""The exception tree in reconciler/errors.py's docstring is the package's: every exception class
under its base, with its module. Read from the source (no module is imported)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import reconciler.errors

PACKAGE = Path(reconciler.errors.__file__).parent
BUILT_IN_BASES = {"Exception", "ValueError", "RuntimeError", "KeyError", "TypeError", "OSError", "LookupError"}


def defined() -> set[tuple[str, str, str]]:
    """(class, base, module) of every class that derives, through the package, from a built-in
    exception; `class X(Base)` with one plain name as its base is how the package writes them."""
    classes: list[tuple[str, str, str]] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and node.bases:
                names = [b.id if isinstance(b, ast.Name) else ast.unparse(b) for b in node.bases]
                classes.append((node.name, ",".join(names), module))
    found: set[tuple[str, str, str]] = set()
    known = set(BUILT_IN_BASES)
    while True:
        new = {c for c in classes if c[1] in known and c not in found}
        if not new:
            return found
        found |= new
        known |= {name for name, _, _ in new}


def documented() -> set[tuple[str, str, str]]:
    tree = reconciler.errors.__doc__ or ""
    parents: list[str] = []
    rows: set[tuple[str, str, str]] = set()
    for line in tree.splitlines():
        match = re.fullmatch(r"(    )+(\w+)\s*([\w.]*)", line)
        if match is None:
            continue
        depth = (len(line) - len(line.lstrip(" "))) // 4 - 1
        name, module = match.group(2), match.group(3)
        parents = parents[:depth] + [name]
        if depth > 0:
            rows.add((name, parents[depth - 1], module))
    return rows


def test_the_docstring_shows_every_exception_class_under_its_base() -> None:
    assert documented() == defined()
