"""What can be checked of the container image without a Docker engine (none runs on CI here).

The image's contract: tini as PID 1 running `docker/entrypoint.sh`, which refuses to start on
an empty or missing `/manifests` (the image bakes no manifests in) and otherwise becomes
`reconciler` with the command line (`watch /manifests`, REST on all interfaces); a HEALTHCHECK
on `/healthz`; a JRE for Spark; the package with the Spark extra; a non-root user. The
entrypoint and the health check run here as they would in the image.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[3]
ENTRYPOINT = ROOT / "docker" / "entrypoint.sh"
HEALTHCHECK = ROOT / "docker" / "healthcheck.py"
IMAGE_DIR = "/usr/local/lib/connect-reconciler"
REST_FLAGS = {"--http-bind": 1, "--no-http": 0}  # added by the REST API work (issue 12, points 1–5)
MANIFEST = """\
apiVersion: reconciler.io/v1
kind: Connector
metadata: {name: idle}
spec: {class: datagen, state: stopped, config: {topic: t, count: 1}}
"""


def instructions() -> list[tuple[str, str]]:
    text = (ROOT / "Dockerfile").read_text()
    joined = re.sub(r"\\\n", " ", text)  # line continuations
    out = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def found(word: str) -> list[str]:
    return [rest for w, rest in instructions() if w == word]


def test_base_image_matches_the_supported_python() -> None:
    base = found("FROM")[0]
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert base.startswith("python:3.11-"), base
    assert ">=3.11" in requires


def test_tini_runs_the_entrypoint_script_with_watch_on_manifests_as_the_command() -> None:
    entrypoint = json.loads(found("ENTRYPOINT")[-1])
    assert entrypoint == ["/usr/bin/tini", "--", f"{IMAGE_DIR}/entrypoint.sh"]
    assert "-g" not in entrypoint  # SIGTERM to the reconciler only: it stops Spark after the batch
    assert re.search(r"apt-get install [^&]*\btini\b", " ".join(found("RUN")))
    cmd = json.loads(found("CMD")[-1])
    assert cmd[:2] == ["watch", "/manifests"]
    assert cmd[cmd.index("--http-bind") + 1] == "0.0.0.0:8083"  # all interfaces inside the image
    assert "8083" in found("EXPOSE")[-1].split()


def test_the_command_line_is_accepted_by_the_cli() -> None:
    cmd = json.loads(found("CMD")[-1])
    parsed, unknown = build_parser(cmd).parse_known_args(cmd)
    for flag, values in REST_FLAGS.items():  # until the REST flags land, they are the only unknowns
        if flag in unknown:
            at = unknown.index(flag)
            del unknown[at : at + 1 + values]
    assert unknown == [] and parsed.command == "watch" and parsed.paths == ["/manifests"]


def test_no_manifests_are_baked_in_and_the_scripts_are_copied() -> None:
    copies = found("COPY")
    assert not any(rest.split()[-1].rstrip("/") == "/manifests" for rest in copies)
    for rest in copies:
        *sources, _ = rest.split()
        for source in sources:
            assert (ROOT / source).exists(), f"Dockerfile copies missing {source}"
    assert f"docker/entrypoint.sh docker/healthcheck.py {IMAGE_DIR}/" in copies
    assert os.access(ENTRYPOINT, os.X_OK)


def test_healthcheck_probes_healthz() -> None:
    check = found("HEALTHCHECK")[-1]
    assert f'CMD ["python", "{IMAGE_DIR}/healthcheck.py"]' in check
    assert "127.0.0.1:8083/healthz" in HEALTHCHECK.read_text()


def test_spark_can_run_in_the_image() -> None:
    runs, env = " ".join(found("RUN")), " ".join(found("ENV"))
    assert "default-jre-headless" in runs  # Java 17 on bookworm, for Spark
    assert "JAVA_HOME=/usr/lib/jvm/default-java" in env
    assert "PYSPARK_PYTHON=" in env  # workers must use the interpreter that has our packages
    assert re.search(r'pip install [^&]*"\.\[spark\]"', runs)


def test_the_driver_jvms_class_data_sharing_archive_is_built_in_where_sessions_look() -> None:
    """Built after the package (its builder is part of it), into the directory the ENV names for
    every session, which no volume of the Kubernetes example covers (it mounts one over ~/.cache)."""
    from reconciler.runtime.spark.cds import DIRECTORY

    env = dict(re.findall(r"(\w+)=(\S+)", " ".join(found("ENV"))))
    directory = env[DIRECTORY]
    runs = found("RUN")
    built = [i for i, run in enumerate(runs) if run == "python -m reconciler.runtime.spark.cds_build"]
    installed = [i for i, run in enumerate(runs) if '".[spark]"' in run]
    assert built and installed and installed[0] < built[0]
    mounts = re.findall(r"mountPath: (\S+?)[,}]", (ROOT / "examples" / "kubernetes" / "deployment.yaml").read_text())
    assert mounts and not any(directory == m or directory.startswith(m.rstrip("/") + "/") for m in mounts)


def test_runs_as_a_non_root_user() -> None:
    users = found("USER")
    assert users and users[-1] not in ("root", "0")


# --- the entrypoint, run here ----------------------------------------------------------------


def entrypoint(manifests: Path, *args: str, **popen: object) -> subprocess.CompletedProcess[str]:
    """The image's entrypoint with the image's command line, /manifests being `manifests`."""
    return subprocess.run(
        ["sh", str(ENTRYPOINT), *args], env=image_env(manifests), capture_output=True, text=True,
        check=False, timeout=120, **popen,  # type: ignore[call-overload]
    )


def image_env(manifests: Path) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)  # where `reconciler` is installed
    return {**os.environ, "RECONCILER_MANIFESTS": str(manifests), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


def command_line(manifests: Path) -> list[str]:
    return [str(manifests) if arg == "/manifests" else arg for arg in json.loads(found("CMD")[-1])]


@pytest.mark.parametrize("layout", ["missing", "empty", "hidden-only", "not-yaml"])
def test_without_manifests_the_entrypoint_says_what_to_mount_and_exits_non_zero(tmp_path: Path, layout: str) -> None:
    manifests = tmp_path / "manifests"
    if layout != "missing":
        manifests.mkdir()
    if layout == "hidden-only":
        (manifests / "..data").mkdir()
        (manifests / "..data" / "a.yaml").write_text(MANIFEST)  # hidden: the reconciler skips it too
    if layout == "not-yaml":
        (manifests / "README.md").write_text("mount manifests here")
    done = entrypoint(manifests, *command_line(manifests))
    assert done.returncode == 64
    assert "nothing to reconcile" in done.stderr and f"Mount a directory of Connector manifests (*.yaml, *.yml) at {manifests}" in done.stderr
    assert done.stdout == ""


def test_with_manifests_the_entrypoint_becomes_reconciler(tmp_path: Path) -> None:
    manifests = tmp_path / "manifests"
    (manifests / "..2026_01").mkdir(parents=True)  # as a ConfigMap volume
    (manifests / "..2026_01" / "idle.yaml").write_text(MANIFEST)
    os.symlink("..2026_01", manifests / "..data")
    os.symlink("..data/idle.yaml", manifests / "idle.yaml")
    done = entrypoint(manifests, "validate", str(manifests))
    assert done.returncode == 0 and "1 connector(s) valid" in done.stdout
    elsewhere = entrypoint(tmp_path / "absent", "validate", str(manifests))  # no check for other paths
    assert elsewhere.returncode == 0


def test_the_entrypoint_execs_so_sigterm_reaches_the_reconciler(tmp_path: Path) -> None:
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    (manifests / "idle.yaml").write_text(MANIFEST)
    args = [arg for arg in command_line(manifests) if arg not in ("--http-bind", "0.0.0.0:8083")]
    args += ["--bootstrap-servers", "127.0.0.1:9", "--timeout", "1", "--interval", "1"]  # no broker there
    process = subprocess.Popen(
        ["sh", str(ENTRYPOINT), *args], env=image_env(manifests), stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True,
    )
    lines: list[str] = []
    stream = process.stderr
    assert stream is not None
    reader = threading.Thread(target=lambda: lines.extend(iter(stream.readline, "")), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        while "/bin/reconciler " not in _command(process.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "/bin/reconciler " in _command(process.pid)  # the same PID is now the reconciler
        # A tick has failed (no broker): the loop runs, its SIGTERM handler is in place. (A fixed
        # sleep raced the interpreter's start on a loaded machine: the signal came first.)
        while not any("cannot reach Kafka" in line for line in lines) and time.monotonic() < deadline:
            time.sleep(0.1)
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        reader.join(timeout=10)
        stream.close()
    err = "".join(lines)
    assert process.returncode == 0, err
    assert "SIGTERM: finishing the current batch, then stopping" in err


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


# --- the health check, run here -------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[tuple[str, dict[str, int]]]:
    """A stand-in for the REST port answering /healthz with the status the test sets."""
    answer = {"status": 200}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self.send_response(answer["status"] if self.path == "/healthz" else 404)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/healthz", answer
    finally:
        httpd.shutdown()
        httpd.server_close()


def healthcheck(url: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RECONCILER_HEALTH_URL": url}
    return subprocess.run([sys.executable, str(HEALTHCHECK)], env=env, capture_output=True, text=True, timeout=30, check=False)


def test_healthcheck_passes_on_200_and_fails_otherwise(server: tuple[str, dict[str, int]]) -> None:
    url, answer = server
    assert healthcheck(url).returncode == 0
    answer["status"] = 503
    failed = healthcheck(url)
    assert failed.returncode == 1 and "answered 503" in failed.stderr
    down = healthcheck("http://127.0.0.1:9/healthz")
    assert down.returncode == 1 and "unhealthy" in down.stderr
