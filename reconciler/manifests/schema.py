"""The JSON Schema of the manifest format, generated from the pydantic models.

`schemas/connector.schema.json` is checked in for editors (yaml-language-server) and CI tools;
a test fails when it drifts from the models. It also describes the built-in connectors'
configs (`schema_plugins`), which the loader checks against the plugins themselves: its own
validator, used to explain documents the models reject, leaves that part out. Regenerate with

    python -m reconciler.manifests.schema            # writes schemas/connector.schema.json
    python -m reconciler.manifests.schema --check    # exit 1 when the file is out of date
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reconciler.core.models import ConnectorManifest
from reconciler.manifests.schema_plugins import connect_key_defs, plugin_clauses

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_FILE = Path(__file__).resolve().parents[2] / "schemas" / "connector.schema.json"
REGENERATE_COMMAND = "python -m reconciler.manifests.schema"


def generate_schema(*, plugins: bool = True) -> dict[str, Any]:
    """The manifest schema (JSON Schema 2020-12), deterministic for a given set of models;
    `plugins`: with the built-in connectors' config keys (as published)."""
    schema = ConnectorManifest.model_json_schema()
    _drop_property_titles(schema)
    document = {
        "$schema": SCHEMA_DIALECT,
        "title": "connect-reconciler Connector manifest",
        "description": (
            "One connector declared for connect-reconciler (apiVersion reconciler.io/v1). "
            "Generated from reconciler.core.models and the built-in connectors' config keys; do not edit by hand."
        ),
        **{key: value for key, value in schema.items() if key != "title"},
    }
    if plugins:
        document["allOf"] = plugin_clauses()
        document["$defs"] = {**document.get("$defs", {}), **connect_key_defs()}
    return document


def render_schema() -> str:
    return json.dumps(generate_schema(), indent=2, ensure_ascii=False) + "\n"


@functools.cache
def validator() -> Validator:
    """A cached validator for the schema (jsonschema is imported only when needed)."""
    import jsonschema

    schema = generate_schema(plugins=False)  # plugin configs: checked by the plugins (manifests.plugin_checks)
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    instance: Validator = validator_class(schema)
    return instance


def _drop_property_titles(node: object) -> None:
    # pydantic titles every field ("Tasksmax"); editors show the field name anyway.
    if isinstance(node, dict):
        properties = node.get("properties")
        if isinstance(properties, dict):
            for field_schema in properties.values():
                if isinstance(field_schema, dict):
                    field_schema.pop("title", None)
        for value in node.values():
            _drop_property_titles(value)
    elif isinstance(node, list):
        for item in node:
            _drop_property_titles(item)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reconciler.manifests.schema", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=SCHEMA_FILE, help="where to write (default: %(default)s)")
    parser.add_argument("--check", action="store_true", help="only check the file is up to date")
    args = parser.parse_args(argv)
    text = render_schema()
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
        if current != text:
            print(f"{args.out} is out of date; run `{REGENERATE_COMMAND}`", file=sys.stderr)
            return 1
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
