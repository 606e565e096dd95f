"""`reconciler plugins [NAME…] [--format text|json] [--connect]`: the connector plugins installed
and the config keys each declares (type, default, limits, doc), as Connect's
`GET /connector-plugins/{plugin}/config` does. Offline: loads plugins, never touches Kafka.

Without NAME: every registered plugin (entry points in `reconciler.connectors`, the built-ins
among them). A NAME may also be a `module:Class` path. `--connect` lists the keys Kafka
Connect itself defines for every connector (never "unknown", whatever the plugin declares).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from reconciler.connectors import framework
from reconciler.connectors.registry import UnknownConnector, available_connectors, load_connector
from reconciler.errors import ReconcilerError

EXIT_OK = 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "plugins",
        help="list connector plugins and the config keys each takes",
        description="List the installed connector plugins (built-ins, entry points; or NAME as module:Class) "
        "with the config keys each declares: type, default, limits and doc.",
    )
    parser.add_argument("names", nargs="*", metavar="NAME", help="only these plugins (a registered name or module:Class)")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    parser.add_argument("--connect", action="store_true", help="also list the keys Kafka Connect defines for every connector")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    names = list(args.names) or available_connectors()
    described = [describe(name) for name in names]
    connect = connect_keys() if args.connect else None
    if args.format == "json":
        document: dict[str, Any] = {"plugins": described}
        if connect is not None:
            document["connect"] = connect
        print(json.dumps(document, indent=2, ensure_ascii=False, default=str))
    else:
        sys.stdout.write(render_text(described, connect))
    broken = [d for d in described if "error" in d]
    if broken:
        raise ReconcilerError(f"{len(broken)} plugin(s) could not be loaded: " + ", ".join(d["name"] for d in broken))
    return EXIT_OK


def describe(name: str) -> dict[str, Any]:
    """A plugin as plain data: name, kind, class, and its keys (None: it declares none)."""
    try:
        cls = load_connector(name)
    except UnknownConnector as exc:
        return {"name": name, "error": exc.message + (f" (hint: {exc.hint})" if exc.hint else "")}
    keys = None if cls.config_def is None else cls.config_def.describe()
    return {"name": name, "kind": cls.kind, "class": f"{cls.__module__}:{cls.__qualname__}", "keys": keys}


def connect_keys() -> dict[str, Any]:
    def listing(definition: Any) -> dict[str, Any]:
        return {"keys": definition.describe(), "prefixes": [{"prefix": p.prefix, "doc": p.doc} for p in definition.prefixes]}

    return {"all": listing(framework.COMMON), "sink": listing(framework.SINK_ONLY), "source": listing(framework.SOURCE_ONLY)}


def render_text(plugins: list[dict[str, Any]], connect: dict[str, Any] | None) -> str:
    lines: list[str] = []
    for plugin in plugins:
        if "error" in plugin:
            lines += [f"{plugin['name']}: {plugin['error']}", ""]
            continue
        lines.append(f"{plugin['name']} ({plugin['kind']}, {plugin['class']})")
        if plugin["keys"] is None:
            lines.append("  declares no keys: its validate() alone checks the config")
        else:
            lines += _key_table(plugin["keys"])
        lines.append("")
    if connect is None:
        if any("error" not in plugin for plugin in plugins):  # not under errors alone
            lines.append("Every connector also takes the keys Kafka Connect defines (`reconciler plugins --connect`).")
    else:
        for kind, title in (("all", "every connector"), ("sink", "sink connectors"), ("source", "source connectors")):
            lines.append(f"Kafka Connect's keys for {title}:")
            lines += _key_table(connect[kind]["keys"])
            lines += [f"  {p['prefix']}*  {p['doc']}" for p in connect[kind]["prefixes"]]
            lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def _key_table(keys: list[dict[str, Any]]) -> list[str]:
    rows = [[key["name"], key["type"], _constraints(key), key["doc"]] for key in keys]
    if not rows:
        return []
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return ["  " + "  ".join(cell.ljust(w) for cell, w in zip(row[:3], widths, strict=True)) + "  " + row[3] for row in rows]


def _constraints(key: dict[str, Any]) -> str:
    parts = ["required"] if key["required"] else [f"default {_shown(key.get('default'))}"]
    if "choices" in key:
        parts.append("one of " + "|".join(key["choices"]))
    if "minimum" in key:
        parts.append(f">= {_number(key['minimum'])}")
    if "maximum" in key:
        parts.append(f"<= {_number(key['maximum'])}")
    return ", ".join(parts)


def _shown(value: object) -> str:
    if value is None:
        return "none"
    if isinstance(value, list):
        return ",".join(map(str, value)) or '""'
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)
