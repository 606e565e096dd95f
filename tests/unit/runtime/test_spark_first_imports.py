"""What a batch's first tasks import, asked of the prefork before it forks them
(`runtime/spark/first_imports.py`, `Connector.task_imports`): the modules named, and all of them
importable in the prefork's environment without starting a thread (one that did would keep the
prefork from forking at all)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from reconciler.runtime.spark import prefork
from reconciler.runtime.spark.first_imports import SINK_MODULES, modules_for

ICEBERG = {"topics": "t", "iceberg.tables": "db.t", "iceberg.catalog.type": "sql",
           "iceberg.catalog.uri": "jdbc:sqlite:/tmp/c.db", "iceberg.catalog.warehouse": "/tmp/w"}
CONNECTORS = [
    ("parquet-sink", {"topics": "t", "path": "/tmp/out"}),
    ("jdbc-sink", {"topics": "t", "connection.url": "jdbc:postgresql://h/db"}),
    ("iceberg-sink", ICEBERG),
    ("datagen", {"topic": "t"}),
]


def test_sinks_bring_arrow_and_each_connector_its_module_and_task_imports() -> None:
    modules = modules_for(CONNECTORS, sinks=True)
    assert modules[:len(SINK_MODULES)] == list(SINK_MODULES)
    assert {"reconciler.connectors.parquet_sink", "pyarrow.parquet", "reconciler.connectors.jdbc.bulk",
            "pyiceberg.catalog.sql", "pyiceberg.io.pyarrow", "reconciler.connectors.datagen"} <= set(modules)
    assert len(modules) == len(set(modules))
    assert modules_for([("datagen", {"topic": "t"})], sinks=False) == ["reconciler.connectors.datagen"]
    assert modules_for([("no.such.module:Nothing", {})], sinks=False) == []  # the batch reports it


def test_every_module_asked_for_imports_without_starting_a_thread_in_the_preforks_environment() -> None:
    modules = modules_for(CONNECTORS, sinks=True)
    script = ("import importlib, json, os, sys\n"
              "import pyspark.worker, confluent_kafka, reconciler.runtime.sink.task, reconciler.runtime.source.task\n"
              "started = []\n"
              "for name in json.loads(sys.argv[1]):\n"
              "    importlib.import_module(name)\n"
              "    if len(os.listdir('/proc/self/task')) > 1: started.append(name); break\n"
              "print(json.dumps(started))\n")
    env = {k: v for k, v in os.environ.items() if k not in prefork.THREADLESS_IMPORTS}
    env.update(prefork.THREADLESS_IMPORTS)
    done = subprocess.run([sys.executable, "-c", script, json.dumps(modules)], env=env, capture_output=True,
                          text=True, timeout=120, check=True)
    assert json.loads(done.stdout) == []
