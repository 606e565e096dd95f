"""The command line itself: RECONCILER_* variables for every option, options before or after the
command, --version, the plugins command, log timestamps and line-buffered output."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from reconciler import __version__
from reconciler.cli import env
from reconciler.cli.main import COMMANDS, build_parser, hoist_options, main

ROOT = Path(__file__).resolve().parents[3]
DATAGEN = """\
apiVersion: reconciler.io/v1
kind: Connector
metadata:
  name: gen
spec:
  class: datagen
  config:
    topic: orders
    count: 10
"""


@pytest.fixture
def manifest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("RECONCILER_BOOTSTRAP_SERVERS", raising=False)
    path = tmp_path / "gen.yaml"
    path.write_text(DATAGEN)
    return path


def command_parser(name: str) -> argparse.ArgumentParser:
    parser = build_parser([name])
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return subparsers.choices[name]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_option_names_its_variable_in_help(command: str) -> None:
    for action in command_parser(command)._actions:
        longs = [o for o in action.option_strings if o.startswith("--")]
        if not longs or longs == ["--help"]:
            continue
        assert f"[env: {env.variable(command, longs[0])}]" in (action.help or ""), (command, longs[0])
    x = next((a for a in command_parser(command)._actions if a.option_strings == ["-X"]), None)
    assert x is None or "RECONCILER_KAFKA_<NAME>" in (x.help or "")


def test_variable_names() -> None:
    assert env.variable("status", "--group-id") == "RECONCILER_GROUP_ID"
    assert env.variable("plan", "--format") == "RECONCILER_PLAN_FORMAT"
    assert env.variable("snapshot", "--out") == "RECONCILER_SNAPSHOT_OUT"
    assert env.variable("run", "--no-create-topics") == "RECONCILER_NO_CREATE_TOPICS"


def test_group_id_default_is_shown_in_help(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RECONCILER_GROUP_ID", raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    with pytest.raises(SystemExit):
        main(["status", "--help"])
    assert "names the internal topics (default: connect-cluster) [env: RECONCILER_GROUP_ID]" in capsys.readouterr().out


def test_variables_set_options(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECONCILER_GROUP_ID", "from-env")
    monkeypatch.setenv("RECONCILER_TIMEOUT", "7.5")
    monkeypatch.setenv("RECONCILER_PRUNE", "true")
    monkeypatch.setenv("RECONCILER_VERBOSE", "2")
    monkeypatch.setenv("RECONCILER_SPARK_CONF", "spark.executor.memory=2g\nspark.jars=a.jar,b.jar\n")
    monkeypatch.setenv("RECONCILER_RUN_FORMAT", "ignored: run has no --format")
    args = build_parser(["run"]).parse_args(["run", "m/"])
    assert (args.group_id, args.timeout, args.prune, args.verbose) == ("from-env", 7.5, True, 2)
    assert args.spark_conf == ["spark.executor.memory=2g", "spark.jars=a.jar,b.jar"]
    flags = build_parser(["run"]).parse_args(["run", "m/", "--group-id", "from-flag", "--timeout", "1"])
    assert (flags.group_id, flags.timeout) == ("from-flag", 1.0)  # a flag wins over its variable


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("RECONCILER_PRUNE", "maybe", "$RECONCILER_PRUNE: expected true or false, got 'maybe'"),
        ("RECONCILER_TIMEOUT", "soon", "$RECONCILER_TIMEOUT: not a number of seconds: 'soon'"),
        ("RECONCILER_TIMEOUT", "-1", "$RECONCILER_TIMEOUT: must be a number of seconds above 0, got -1"),
        ("RECONCILER_PLAN_FORMAT", "yaml", "$RECONCILER_PLAN_FORMAT: invalid choice 'yaml' (choose from text, markdown, json)"),
    ],
)
def test_a_bad_variable_is_a_usage_error_naming_it(
    manifest: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], variable: str, value: str, message: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(SystemExit) as exited:
        main(["plan", str(manifest), "--detailed-exitcode"])
    assert exited.value.code == 1  # an error: 2 is "changes present"
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "{manifest}", "--detailed-exitcode", "--formt", "json"],
        ["drift", "{manifest}", "--bogus"],
        ["--bogus", "drift", "{manifest}"],
        ["plan", "{manifest}", "--detailed-exitcode", "--format", "yaml"],
        ["drift"],
        ["status", "--timeout", "abc"],
        ["status", "--timeout", "0"],  # it raised deep in a socket call
    ],
)
def test_a_usage_error_exits_1_with_the_usage_of_its_command(
    manifest: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    argv = [a.format(manifest=manifest) for a in argv]
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 1  # not 2, which `plan --detailed-exitcode` and `drift` use for changes
    command = next(a for a in argv if a in COMMANDS)
    assert capsys.readouterr().err.startswith(f"usage: reconciler {command} ")


def test_a_usage_error_without_a_command_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in ([], ["bogus"]):
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 1
        assert capsys.readouterr().err.startswith("usage: reconciler [-h]")


def test_command_specific_variables_drive_the_command(
    manifest: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RECONCILER_VALIDATE_FORMAT", "json")
    assert main(["validate", str(manifest)]) == 0
    assert json.loads(capsys.readouterr().out) == []
    monkeypatch.setenv("RECONCILER_DETAILED_EXITCODE", "1")
    monkeypatch.setenv("RECONCILER_PLAN_FORMAT", "markdown")
    assert main(["plan", str(manifest)]) == 2
    assert "| `gen` | create |" in capsys.readouterr().out


def test_options_before_the_command(manifest: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert hoist_options(["-v", "--group-id", "g", "status", "x"]) == ["status", "-v", "--group-id", "g", "x"]
    assert hoist_options(["--group-id", "run", "status"]) == ["status", "--group-id", "run"]  # `run` is a value here
    assert hoist_options(["--version", "status"]) == ["--version", "status"]
    assert main(["-v", "--group-id", "g", "plan", str(manifest), "--detailed-exitcode"]) == 2
    assert main(["plan", str(manifest), "-v", "--detailed-exitcode"]) == 2  # and after it
    assert "will be created" in capsys.readouterr().out


def reconciler(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reconciler.cli.main", *args], cwd=ROOT, capture_output=True, text=True, timeout=60,
        check=False, **kwargs,  # type: ignore[call-overload]
    )


def test_version() -> None:
    done = reconciler("--version")
    assert (done.returncode, done.stdout) == (0, f"reconciler {__version__}\n")


def test_log_lines_carry_a_utc_timestamp_and_stdout_is_line_buffered_when_redirected() -> None:
    code = (
        "import logging, sys\n"
        "from reconciler.cli.main import _set_up_output\n"
        "_set_up_output(0)\n"
        "print('line-buffered:', sys.stdout.line_buffering)\n"
        "logging.getLogger('reconciler.demo').warning('something happened')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout == "line-buffered: True\n"  # stdout is a pipe here, block-buffered by default
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z WARNING reconciler\.demo: something happened\n", done.stderr)


def test_plugins_lists_the_built_ins_and_their_keys(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    assert "datagen (source, reconciler.connectors.datagen:DatagenConnector)" in out
    assert re.search(r"^  count +long +required, >= 0 +Records over the connector's whole life", out, re.M)
    assert re.search(r"^  compression +string +default snappy, one of snappy\|zstd\|gzip\|lz4\|brotli\|none ", out, re.M)
    assert "parquet-sink (sink, " in out and "file-source (source, " in out
    assert main(["plugins", "datagen", "--connect"]) == 0
    out = capsys.readouterr().out
    assert "Kafka Connect's keys for sink connectors:" in out and re.search(r"^  producer\.override\.\*", out, re.M)


def test_plugins_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugins", "parquet-sink", "reconciler.connectors.faulty:FaultySource", "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    sink, faulty = document["plugins"]
    assert (sink["name"], sink["kind"], sink["class"]) == (
        "parquet-sink", "sink", "reconciler.connectors.parquet_sink:ParquetSinkConnector")
    assert sink["keys"][0] == {"name": "topics", "type": "list", "required": True, "doc": "Topics to archive, comma-separated."}
    assert {"name": "fail.task.ids", "type": "list", "required": False, "default": [],
            "doc": "Which task ids fail (default: all)."} in faulty["keys"]


def test_plugins_reports_an_unknown_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugins", "nosuch"]) == 1
    captured = capsys.readouterr()
    assert "nosuch: unknown connector class 'nosuch'" in captured.out
    assert "Every connector also takes" not in captured.out  # no plugin listed: no footer under the error
    assert "error: 1 plugin(s) could not be loaded: nosuch" in captured.err
    assert main(["plugins", "nosuch", "datagen"]) == 1
    assert "Every connector also takes" in capsys.readouterr().out  # under datagen's keys


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--group-id", ""], "error: --group-id is empty"),
        (["--group-id", "a b"], "error: --group-id 'a b' names the topic 'a b-configs', which Kafka refuses"),
        (["--status-topic", "s" * 250], "error: --status-topic names the topic 'sss"),
    ],
)
def test_a_group_or_topic_kafka_would_refuse_is_an_error_before_any_connection(
    manifest: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    """An empty RECONCILER_GROUP_ID made `apply` create `-configs`, `-status`… and write there.
    Nothing listens at the address: an error about it would mean the names were not checked first."""
    assert main(["apply", str(manifest), "--bootstrap-servers", "127.0.0.1:1", *flags]) == 1
    assert capsys.readouterr().err.startswith(message)


@pytest.mark.parametrize(
    ("master", "message"),
    [
        ("bogus", "'bogus' is not a Spark master URL: local, local[N], local[*], spark://HOST:PORT"),
        ("spark://h", "'spark://h': a standalone master is spark://HOST:PORT[,HOST:PORT…]"),
        ("local[0]", "'local[0]' runs no thread"),
        ("sc://h:15002", "--spark-remote sc://HOST:PORT for Spark Connect"),
    ],
)
def test_a_spark_master_spark_would_refuse_is_a_usage_error_before_anything_is_written(
    manifest: Path, capsys: pytest.CaptureFixture[str], master: str, message: str
) -> None:
    """Spark itself refuses a bad master only once its JVM runs, with a Java stack trace, and
    after `run` applied the manifests."""
    with pytest.raises(SystemExit) as exited:
        main(["run", str(manifest), "--once", "--bootstrap-servers", "127.0.0.1:1", "--spark-master", master])
    assert exited.value.code == 1
    assert message in capsys.readouterr().err


def test_the_spark_masters_spark_takes_are_taken() -> None:
    from reconciler.cli.run_options import spark_master

    masters = ["local", "local[2]", "local[*]", "local[4, 2]", "local-cluster[2,1,1024]", "spark://h:7077",
               "spark://h1:7077,h2:7077", "spark://[::1]:7077", "k8s://https://h:6443", "yarn"]
    assert [spark_master(m) for m in masters] == masters
