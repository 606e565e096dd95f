"""The manifest examples of the README and of docs/manifests.md are manifests the product accepts,
so they cannot rot: the YAML block under each page's heading is loaded as `reconciler validate`
loads it (every check, the plugin's included), with its `${env:…}` variable set and its
`${file:…}` value kept for a Connect worker."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reconciler.manifests.loader import load_manifests

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = [(ROOT / "README.md", "## Manifest format"), (ROOT / "docs" / "manifests.md", "## A manifest, every field")]
ENV_PLACEHOLDER = re.compile(r"\$\{env:(?P<name>[A-Za-z_][A-Za-z0-9_]*)\}")
FILE_PLACEHOLDER = re.compile(r"\$\{file:[^}]+\}")


def section_yaml(page: Path, heading: str) -> str:
    """The first ```yaml block after the heading `heading` of `page`."""
    text = page.read_text(encoding="utf-8")
    start = text.index(f"\n{heading}\n")
    match = re.compile(r"^```yaml\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL).search(text, start)
    assert match is not None, f"no yaml block under {heading!r}"
    return match.group("body")


@pytest.mark.parametrize(("page", "heading"), EXAMPLES, ids=lambda x: x.name if isinstance(x, Path) else x)
def test_the_manifest_format_example_validates(tmp_path: Path, page: Path, heading: str) -> None:
    example = section_yaml(page, heading)
    (tmp_path / "example.yaml").write_text(example, encoding="utf-8")
    env = {match.group("name"): "example-s3cret" for match in ENV_PLACEHOLDER.finditer(example)}
    result = load_manifests([tmp_path], env=env)
    assert [d.render() for d in result.diagnostics] == []
    (connector,) = result.connectors
    config = connector.spec.config
    # It still shows both placeholder kinds and a `sensitive` entry, as its comments say.
    assert env and "example-s3cret" not in config.values(), "an ${env:…} placeholder, kept for the runtime"
    assert any(f"${{env:{name}}}" in config.values() for name in env)
    kept = [value for value in config.values() if isinstance(value, str) and FILE_PLACEHOLDER.fullmatch(value)]
    assert kept and kept[0] in example, "a ${file:…} placeholder, kept verbatim for the runtime"
    assert connector.spec.sensitive
