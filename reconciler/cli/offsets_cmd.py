"""`reconciler offsets NAME` and `reconciler offsets import PATH…`.

* `offsets NAME [--format json|table] [--history]`: Connect's `GET /connectors/{name}/offsets`
  body — a source connector's every known partition in the offsets topic(s) read to the end
  (the worker topic, plus its own `offsets.storage.topic` if it has one), a sink's committed
  offsets of its consumer group. Works in any target state; an unknown connector is Connect's
  404 ("Connector NAME not found", exit 1). `--history` lists the rollback snapshots taken
  before each offsets request ran (id, time, the offsets then, whether it was applied). Both
  are read by `app.offsets_view`; here they are printed.
* `offsets import PATH… --from-connect-offsets-topic T [--from-bootstrap-servers B]`: read a
  Kafka Connect cluster's offsets (and sink consumer groups) and print `spec.offsets` blocks for
  the connectors the manifests declare, to paste and review (`reconciler.offsets.migrate`).
  A connector literally named `import` is shown with `offsets --name import`.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reconciler.app.offsets_view import current_offsets, offsets_history
from reconciler.render.offsets_history import OffsetsSnapshot
from reconciler.core.offsets_rules import partition_order
from reconciler.cli.options import add_kafka_options, kafka_settings
from reconciler.errors import ReconcilerError
from reconciler.kafka.io.client_config import translate_remembered
from reconciler.manifests import load_or_raise
from reconciler.offsets.migrate import render_snippets, run_import as read_old_cluster

if TYPE_CHECKING:
    from reconciler.kafka.settings import KafkaSettings

EXIT_OK = 0
IMPORT = "import"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "offsets",
        help="show a connector's offsets (Connect's GET …/offsets), or import them from a Connect cluster",
        description="`offsets NAME`: the connector's current offsets, as Connect's GET /connectors/NAME/offsets. "
        "`offsets import PATH… --from-connect-offsets-topic T`: print spec.offsets blocks that carry a Kafka "
        "Connect cluster's offsets over to the connectors the manifests declare.",
    )
    parser.add_argument("target", nargs="?", metavar="NAME|import", help="a connector name, or `import`")
    parser.add_argument("paths", nargs="*", metavar="PATH", help="import: manifest files or directories")
    parser.add_argument("--name", default=None, help="the connector name (for a connector named `import`)")
    parser.add_argument("--format", choices=("json", "table"), default="json", help="output format (default: json)")
    parser.add_argument("--history", action="store_true", help="list the rollback snapshots of past offsets requests")
    migration = parser.add_argument_group("import from a Kafka Connect cluster")
    migration.add_argument(
        "--from-connect-offsets-topic", action="append", default=[], metavar="TOPIC",
        help="the Connect cluster's offset.storage.topic (repeatable: a connector's own offsets.storage.topic)",
    )
    migration.add_argument("--from-bootstrap-servers", default=None, help="its brokers (default: the ones below)")
    migration.add_argument(
        "--from-client-setting", action="append", default=[], metavar="KEY=VALUE",
        help="a client setting for its brokers (default: the -X settings below)",
    )
    migration.add_argument("--connector", action="append", default=[], metavar="NAME", help="only these connectors")
    migration.add_argument("--id", dest="request_id", default=None, help="request id (default: import-<UTC time>)")
    migration.add_argument("--out", type=Path, default=None, help="write the blocks to this file instead of stdout")
    add_kafka_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.target == IMPORT and args.name is None:
        return run_import(args)
    name = args.name or args.target
    if name is None:
        raise ReconcilerError("name a connector: `reconciler offsets NAME`, or `reconciler offsets import PATH…`")
    if args.paths or (args.name is not None and args.target is not None):
        raise ReconcilerError("`reconciler offsets NAME` takes one connector name and no paths")
    return show(args, name)


# --- GET /connectors/{name}/offsets ----------------------------------------------------------------


def show(args: argparse.Namespace, name: str) -> int:
    settings = kafka_settings(args)
    if args.history:
        print_history(offsets_history(settings, name), args.format)
        return EXIT_OK
    body = {"offsets": current_offsets(settings, name)}
    if args.format == "json":
        print(json.dumps(body, indent=2, ensure_ascii=False))
    else:
        print_offsets_table(body["offsets"])
    return EXIT_OK


def compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def print_offsets_table(entries: list[dict[str, Any]]) -> None:
    if not entries:
        print("No offsets.")
        return
    ordered = sorted(entries, key=lambda e: partition_order(e["partition"]))
    rows = [["PARTITION", "OFFSET"]] + [[compact(e["partition"]), compact(e["offset"])] for e in ordered]
    width = max(len(row[0]) for row in rows)
    for partition, offset in rows:
        print(f"{partition.ljust(width)}  {offset}")


def print_history(entries: list[OffsetsSnapshot], fmt: str) -> None:
    if fmt == "json":
        print(json.dumps({"history": [dataclasses.asdict(e) for e in entries]}, indent=2, ensure_ascii=False))
        return
    if not entries:
        print("No offsets snapshots: no offsets request has run for this connector.")
        return
    for entry in entries:
        print(f"{entry.id}  taken {entry.taken_at}  {entry.status}")
        print_offsets_table(entry.offsets)
        print()


# --- import from a Kafka Connect cluster --------------------------------------------------------


def run_import(args: argparse.Namespace) -> int:
    if not args.paths:
        raise ReconcilerError("`reconciler offsets import` needs the manifest PATHs of the connectors to import")
    if not args.from_connect_offsets_topic:
        raise ReconcilerError(
            "name the Connect cluster's offsets topic with --from-connect-offsets-topic",
            hint="it is the workers' `offset.storage.topic` setting (Strimzi: spec.config.offset.storage.topic)",
        )
    ours = kafka_settings(args)
    old = _old_cluster(args, ours)
    desired = load_or_raise(args.paths, consequence="no offsets were read")
    result = read_old_cluster(old, ours, desired, args.from_connect_offsets_topic, only=args.connector)
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    if not result.requests:
        print("Nothing to import: no declared connector has offsets in the Connect cluster.", file=sys.stderr)
        return EXIT_OK
    text = render_snippets(result, args.request_id or default_request_id())
    if args.out is None:
        sys.stdout.write(text)
    else:
        _write(args.out, text)
        print(f"wrote {len(result.requests)} offsets block(s) to {args.out}", file=sys.stderr)
    return EXIT_OK


def _old_cluster(args: argparse.Namespace, ours: KafkaSettings) -> KafkaSettings:
    given: dict[str, str] = {}
    for item in args.from_client_setting:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ReconcilerError(f"--from-client-setting expects KEY=VALUE, got {item!r}")
        given[key.strip()] = value
    client = {**ours.client_config, **translate_remembered(given, "--from-client-setting")}
    return dataclasses.replace(
        ours, bootstrap_servers=args.from_bootstrap_servers or ours.bootstrap_servers, client_config=client
    )


def default_request_id() -> str:
    now = datetime.datetime.now(tz=datetime.timezone.utc)
    return "import-" + now.strftime("%Y%m%dT%H%M%SZ")


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ReconcilerError(f"cannot write {path}: {exc.strerror}") from exc
