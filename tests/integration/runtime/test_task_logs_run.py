"""What connector code logs, in `reconciler run`'s output: a task's records, from the Python
workers Spark starts (`runtime.batch.task_logs`), at the level `-v` set, in the CLI's format (JSON
here), tagged with connector and task, the connector's secrets masked; the connector's own
calls, on the driver, tagged with the connector. Before, Python dropped a task's INFO records
and printed a WARNING's bare message, which came out labelled as the Spark JVM's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from reconciler.core.redact import MASK
from reconciler.kafka.settings import KafkaSettings
from run_support import produce_plain
from loop_support import ROOT
from run_support import child_env, create_topic

PLUGINS = Path(__file__).resolve().parents[1] / "plugins"
SECRET = "hunter2-of-the-sink"


def connector(name: str, cls: str, **config: str) -> str:
    lines = [f"    {key}: {json.dumps(value)}" for key, value in config.items()]
    return "\n".join([
        "apiVersion: reconciler.io/v1", "kind: Connector", f"metadata: {{name: {name}}}", "spec:",
        f"  class: '{cls}'", "  tasksMax: 1", "  config:", *lines,
    ]) + "\n"


def test_a_tasks_log_records_come_out_as_the_clis_tagged_and_masked(kafka_settings: KafkaSettings, tmp_path: Path) -> None:
    topic = f"{kafka_settings.group_id}.chatty"
    create_topic(kafka_settings, topic, 1)
    produce_plain(kafka_settings, topic, [(b"k", b"v%d" % i, 0) for i in range(3)])
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    (manifests / "source.yaml").write_text(connector("talker", "chatty:ChattySource", topic=topic))
    (manifests / "sink.yaml").write_text(
        connector("listener", "chatty:ChattySink", topics=topic, **{"connection.password": SECRET})
    )

    done = subprocess.run(
        [sys.executable, "-m", "reconciler.cli.main", "-v", "run", str(manifests), "--once", "--log-format", "json",
         "--spark-conf", "spark.driver.memory=768m", "--bootstrap-servers", kafka_settings.bootstrap_servers,
         "--group-id", kafka_settings.group_id],
        cwd=ROOT, env=child_env(PYTHONPATH=os.pathsep.join(filter(None, [str(PLUGINS), os.environ.get("PYTHONPATH")]))), capture_output=True, text=True, check=False, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    events = [json.loads(line) for line in lines if line.startswith("{")]
    assert len(events) == len(lines), "not JSON:\n" + "\n".join(x for x in lines if x[:1] != "{")
    chatty = sorted((e["connector"], e.get("task", -1), e["level"], e["message"]) for e in events if e["logger"] == "chatty")
    assert [entry for entry in chatty if "config:" not in entry[3]] == [
        ("listener", 0, "info", "sink wrote 3 records"),
        ("talker", -1, "info", "source task configs"),  # the connector's own call, on the driver
        ("talker", 0, "info", "source polled"),
    ]
    configs = {name: message for name, _, level, message in chatty if "config:" in message and level == "warning"}
    assert set(configs) == {"listener", "talker"}
    assert f"'connection.password': '{MASK}'" in configs["listener"]
    assert SECRET not in done.stderr and SECRET not in done.stdout
    assert not [e for e in events if e["logger"] == "spark.jvm" and "chatty" in e["message"]]
