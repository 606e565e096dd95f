"""Every example README runs as written: its ```bash blocks, line by line, in a temporary copy of
the example, against the test broker (RECONCILER_BOOTSTRAP_SERVERS, as the READMEs ask).

- A `reconciler …` line runs in this process (`reconciler.cli.main.main`, the same CLI), so
  `run` ticks share the session's SparkSession instead of starting Spark each time; any other
  line (`touch`, `rm`, `python …`) runs in bash. `export NAME=value` sets the environment.
- Every line must exit 0 (2 as well for `--detailed-exitcode`), except one ending in `|| true`,
  which the README marks as expected to fail.
- A ```text block right after a ```bash block is what its last command prints; it is compared
  column by column (runs of spaces are alignment), so what a README says `status` shows is
  what `status` shows. Dates and times (`2026-11-26 16:30:34Z`, a batch's) match any.
- The deployment kits (`KITS`) hold no scenario to run: `tests/unit/project/test_gitops_kit.py` checks them.
- `OWN_TEST` scenarios are run by a test of their own, with this module's `Runner`.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from reconciler.cli.main import main

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
FENCE = re.compile(r"^```(?P<lang>\w*)\n(?P<body>.*?)^```", re.MULTILINE | re.DOTALL)
EXPECTED_TO_FAIL = ["||", "true"]
# Variables of the test session, kept; any other RECONCILER_* one is the README's to set.
KEPT = ("RECONCILER_BOOTSTRAP_SERVERS", "RECONCILER_CACHE_DIR", "RECONCILER_DRIVER", "RECONCILER_FAILPOINTS",
        "RECONCILER_TEST")


@dataclass
class Block:
    commands: list[str]
    expected: str | None = None
    outputs: list[str] = field(default_factory=list)


def blocks(readme: Path) -> list[Block]:
    found: list[Block] = []
    previous = ""
    for match in FENCE.finditer(readme.read_text(encoding="utf-8")):
        lang, body = match["lang"], match["body"]
        if lang == "bash":
            lines = [line.strip() for line in body.splitlines()]
            found.append(Block([line for line in lines if line and not line.startswith("#")]))
        elif lang == "text" and previous == "bash" and found:
            found[-1].expected = body
        previous = lang
    return found


KITS = ("ci", "kubernetes")
# Scenarios whose own test runs their README (with this module's Runner) and checks what moved.
OWN_TEST = ("plugin", "s3")  # test_example_plugin.py, test_example_s3.py
DATE_TIME = (re.compile(r"\d{4}-\d\d-\d\d"), re.compile(r"\d\d:\d\d:\d\dZ"))


def readmes() -> list[Path]:
    scenarios = [p for p in sorted(EXAMPLES.glob("*/README.md")) if p.parent.name not in (*KITS, *OWN_TEST)]
    return [EXAMPLES / "README.md", *scenarios]


def columns(text: str) -> list[list[str]]:
    return [[_any_time(word) for word in line.split()] for line in text.strip().splitlines()]


def _any_time(word: str) -> str:
    for pattern in DATE_TIME:
        if pattern.fullmatch(word):
            return pattern.pattern
    return word


class Runner:
    """`cli_in_subprocess`: `reconciler` lines run as their own process too (with their own
    Spark), for a README whose exported variables the tasks must see, as the session's Spark
    workers, started before, would not."""

    def __init__(self, directory: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                 *, cli_in_subprocess: bool = False) -> None:
        self.directory, self.monkeypatch, self.capsys = directory, monkeypatch, capsys
        self.cli_in_subprocess = cli_in_subprocess

    def run(self, line: str) -> str:
        """The line's stdout; fails the test when it exits as the README does not expect."""
        words = shlex.split(line, comments=True)
        expect_failure = words[-2:] == EXPECTED_TO_FAIL
        if expect_failure:
            words = words[:-2]
        if words[0] == "export":
            name, _, value = words[1].partition("=")
            self.monkeypatch.setenv(name, value)
            return ""
        if words[0] == "reconciler" and self.cli_in_subprocess:
            done = subprocess.run([sys.executable, "-m", "reconciler.cli.main", *words[1:]], cwd=self.directory,
                                  env={**os.environ, "RECONCILER_HTTP_BIND": "127.0.0.1:0"}, capture_output=True,
                                  text=True, timeout=300, check=False)
            code, out, err = done.returncode, done.stdout, done.stderr
        elif words[0] == "reconciler":
            self.capsys.readouterr()
            code = main(words[1:])
            out, err = self.capsys.readouterr()
        else:
            done = subprocess.run(["bash", "-c", line], cwd=self.directory, env=dict(os.environ),
                                  capture_output=True, text=True, timeout=120, check=False)
            code, out, err = done.returncode, done.stdout, done.stderr
        allowed = {0, 2} if "--detailed-exitcode" in words else {0}
        assert expect_failure or code in allowed, f"`{line}` exited {code}:\n{out}\n{err}"
        return out


@pytest.mark.parametrize("readme", readmes(), ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_readme_commands_run_as_written(
    readme: Path,
    kafka: Any,
    spark_session: SparkSession,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    source = readme.parent
    copy = tmp_path / source.name
    shutil.copytree(source, copy)
    monkeypatch.chdir(copy)
    monkeypatch.setenv("RECONCILER_BOOTSTRAP_SERVERS", kafka.bootstrap)
    for name in [n for n in os.environ if n.startswith("RECONCILER_") and not n.startswith(KEPT)]:
        monkeypatch.delenv(name)
    found = blocks(readme)
    assert found, f"{readme} lists no commands"
    runner = Runner(copy, monkeypatch, capsys)
    try:
        for block in found:
            outputs = [runner.run(line) for line in block.commands]
            if block.expected is not None:
                assert columns(outputs[-1]) == columns(block.expected), (
                    f"{readme.relative_to(ROOT)}: `{block.commands[-1]}` printed\n{outputs[-1]}\nnot what the README "
                    f"shows:\n{block.expected}"
                )
    finally:
        stop_started_servers(copy)


def stop_started_servers(directory: Path) -> None:
    """A README that starts a server in the background (`examples/postgres`: the PostgreSQL
    helper, its PID in `.postgres.pid`) stops it as its last line; a README that failed before
    that line leaves it to this. The PID is the one the README's own line recorded."""
    pid_file = directory / ".postgres.pid"
    if not pid_file.is_file():
        return
    try:
        os.kill(int(pid_file.read_text().strip()), signal.SIGTERM)
    except (ProcessLookupError, ValueError):
        pass


def test_every_example_has_a_readme_with_commands() -> None:
    scenarios = sorted(p for p in EXAMPLES.iterdir() if p.is_dir() and p.name not in KITS)
    assert scenarios and all((p / "README.md").is_file() for p in scenarios)
    for readme in [*readmes(), *(EXAMPLES / name / "README.md" for name in OWN_TEST)]:
        assert blocks(readme), readme
        assert "/var/lib" not in readme.read_text()
    for manifest in EXAMPLES.rglob("*.yaml"):
        assert "/var/lib" not in manifest.read_text(), f"{manifest}: examples write under the working directory"
