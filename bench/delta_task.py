"""One `delta-sink` task in a process of its own, without Kafka or Spark: its peak memory and time
for one range, as a Spark Python worker runs it (issue 28: a worker held a whole range).

    .venv/bin/python bench/delta_task.py [--records 578710] [--row-bytes 100] [--rounds 3]
        [--tree LABEL=PATH ...] [--key delta.max.records.per.file=50000 ...]

Each run is a fresh process (`--child`) that starts a `DeltaSinkTask` on a table of its own,
feeds it the range in batches of the runtime's size (`reader.CONSUME_BATCH`, 10,000), the
records made batch by batch as bench/lakehouse.py's are (JsonConverter with schemas, ~100 B
rows: id, customer, quantity, pad; only one batch exists at a time, outside the task), asks for
its closing pre-commit and commits its files with the connector's own `commit`. It reports the
task's wall and CPU seconds (`write` and `pre_commit` only, the commit apart), the process's
peak RSS (VmHWM; a fresh interpreter with pyarrow and deltalake imported is ~150 MB of it) and
the table read back by delta-rs: a run whose table does not hold every id once prints no figure.

`--tree LABEL=PATH` runs the reconciler package of another checkout (e.g. `git archive` of
main into a directory) beside this one's, the trees alternating run by run (this order, then
the reverse, …); each figure is the median of a tree's runs with the fastest and slowest.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
JSON = "org.apache.kafka.connect.json.JsonConverter"
SCHEMA = {"type": "struct", "name": "bench.row", "optional": False, "fields": [
    {"field": "id", "type": "int64", "optional": False}, {"field": "customer", "type": "string", "optional": True},
    {"field": "quantity", "type": "int32", "optional": True}, {"field": "pad", "type": "string", "optional": True}]}
BATCH = 10_000  # reconciler.runtime.sink.reader.CONSUME_BATCH (not imported: a tree may predate it)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=578_710, help="the range (the larger of the 1M bench's two)")
    parser.add_argument("--row-bytes", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tree", action="append", default=[], help="LABEL=PATH of another checkout to run too")
    parser.add_argument("--key", action="append", default=[], help="KEY=VALUE added to the connector's config")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    extra = dict(item.split("=", 1) for item in args.key)
    if args.child:
        print(json.dumps(child(args.records, args.row_bytes, extra)))
        return 0
    trees = [("this", REPO)] + [(t.split("=", 1)[0], Path(t.split("=", 1)[1]).resolve()) for t in args.tree]
    print(f"load average at the start: {load()}", flush=True)
    runs: dict[str, list[dict[str, Any]]] = {label: [] for label, _ in trees}
    for round_ in range(args.rounds):
        for label, path in trees if round_ % 2 == 0 else trees[::-1]:
            result = run_child(path, args)
            if result["rows"] != args.records or result["distinct"] != args.records:
                print(f"{label}: the table holds {result['rows']} rows, {result['distinct']} distinct ids, not "
                      f"{args.records} once: no figure", file=sys.stderr)
                return 1
            runs[label].append(result)
            print(f"  {label} round {round_ + 1}: {result['wall_s']:.2f} s, {result['cpu_s']:.2f} CPU s, "
                  f"peak {result['peak_mb']:.0f} MB, {result['files']} file(s); load {load()}", flush=True)
    print(f"load average at the end: {load()}")
    for label, results in runs.items():
        print(f"{label}: {args.records:,} records, " + ", ".join(
            f"{name} {spread([r[key] for r in results], unit)}"
            for name, key, unit in (("task", "wall_s", "s"), ("CPU", "cpu_s", "s"), ("peak RSS", "peak_mb", "MB")))
            + f", {results[0]['files']} file(s)")
    return 0


def run_child(tree: Path, args: argparse.Namespace) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", "--records", str(args.records), "--row-bytes", str(args.row_bytes),
               *[f"--key={item}" for item in args.key]]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"the run on {tree} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def child(records: int, row_bytes: int, extra: dict[str, str]) -> dict[str, Any]:
    import pyarrow.compute as pc
    from deltalake import DeltaTable

    from reconciler.connectors.api import Written
    from reconciler.connectors.delta.connector import DeltaSinkConnector, DeltaSinkTask

    with tempfile.TemporaryDirectory(prefix="delta-task-") as workdir:
        config = {"name": "bench", "topics": "rows", "delta.table.uri": f"{workdir}/table", "value.converter": JSON,
                  "key.converter": "org.apache.kafka.connect.storage.StringConverter", **extra}
        task = DeltaSinkTask()
        task.start(config)
        task.open([("rows", 0)])
        wall = cpu = 0.0
        for batch in batches(records, row_bytes):
            started, started_cpu = time.perf_counter(), time.process_time()
            task.write(batch)
            wall, cpu = wall + time.perf_counter() - started, cpu + time.process_time() - started_cpu
        started, started_cpu = time.perf_counter(), time.process_time()
        offset = task.pre_commit({("rows", 0): records}, closing=True)[("rows", 0)]
        text = task.committable()
        wall, cpu = wall + time.perf_counter() - started, cpu + time.process_time() - started_cpu
        peak = high_water_mb()
        assert text is not None, "the task reported no files"
        DeltaSinkConnector().commit(config, [Written(topic="rows", partition=0, offset=offset, committable=text,
                                                     start=0)])
        ids = DeltaTable(f"{workdir}/table").to_pyarrow_table(columns=["id"]).column("id")
        return {"wall_s": wall, "cpu_s": cpu, "peak_mb": peak, "rows": len(ids), "distinct": len(pc.unique(ids)),
                "files": len(json.loads(text)["files"])}


def batches(records: int, row_bytes: int) -> Iterator[Any]:
    """The range as the runtime's feed hands it: `sink_schema()` batches of `BATCH` records."""
    from reconciler.connectors.api import SinkRecord, records_to_batch

    schema = json.dumps(SCHEMA, separators=(",", ":"))
    for first in range(0, records, BATCH):
        rows = []
        for i in range(first, min(first + BATCH, records)):
            customer = f"customer {i % 10_000:05d}"
            pad = "x" * max(0, row_bytes - 8 - 4 - len(customer))
            payload = json.dumps({"id": i, "customer": customer, "quantity": i % 100, "pad": pad},
                                 separators=(",", ":"))
            rows.append(SinkRecord(topic="rows", partition=0, offset=i, timestamp_ms=1_700_000_000_000 + i,
                                   key=b"%d" % i, value=f'{{"schema":{schema},"payload":{payload}}}'.encode()))
        yield records_to_batch(rows)


def high_water_mb() -> float:
    """This process's peak RSS (VmHWM), MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def spread(values: list[float], unit: str) -> str:
    return f"{statistics.median(values):.2f} {unit} ({min(values):.2f}–{max(values):.2f})" if unit == "s" else \
        f"{statistics.median(values):.0f} {unit} ({min(values):.0f}–{max(values):.0f})"


def load() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


if __name__ == "__main__":
    sys.exit(main())
