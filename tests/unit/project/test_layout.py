"""The package's shape stays readable: small modules, short functions, packages that say what
they hold (docs/architecture.md). The imports between packages are `lint-imports`' to check."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[3] / "reconciler"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 50  # from its first decorator to its last line, docstring included
MODULES = sorted(path for path in PACKAGE.rglob("*.py") if "__pycache__" not in path.parts)
PACKAGES = sorted(path for path in MODULES if path.name == "__init__.py" and path.parent != PACKAGE)


def _name(path: Path) -> str:
    return str(path.relative_to(PACKAGE.parent))


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_modules_stay_small(path: Path) -> None:
    assert len(path.read_text(encoding="utf-8").splitlines()) <= MAX_MODULE_LINES


@pytest.mark.parametrize("path", MODULES, ids=_name)
def test_functions_stay_short(path: Path) -> None:
    long = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            if (node.end_lineno or start) - start + 1 > MAX_FUNCTION_LINES:
                long.append(f"{node.name} (line {node.lineno})")
    assert not long


@pytest.mark.parametrize("path", PACKAGES, ids=_name)
def test_every_package_says_what_it_holds_and_may_import(path: Path) -> None:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    assert len(doc.split()) >= 15 and "import" in doc, "the docstring names the package's contents and its imports"
