"""Pack the Python environment Spark executors need, for `spark.archives` (venv-pack).

PySpark's documented way to give executors third-party packages: a virtual environment with
them, packed into one archive that Spark unpacks in every executor's working directory
(docs/clusters.md). The executors need what tasks import besides this project
(which the driver ships itself) and PySpark (which Spark puts on their path): confluent-kafka,
pyarrow, numpy, pydantic, msgspec, botocore, requests, google-auth, azure-identity and
hdfs-native, at the versions this driver runs.

    python -m reconciler.devtools.pack_env executor-env.tar.gz
    reconciler run … --spark-master spark://HOST:7077 \\
        --spark-conf spark.archives=executor-env.tar.gz#environment \\
        --spark-conf spark.pyspark.python=./environment/bin/python

venv-pack keeps the interpreter out of the archive: the environment's `bin/python` points at
this machine's Python, so every worker needs the same Python at the same path (conda-pack
packs the interpreter too, for machines that differ).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from reconciler.errors import ReconcilerError
from reconciler.toolchain.caches import cache_root, keep_newest

# botocore: the file sinks' conditional PUT to S3 (reconciler.connectors.storage.store); requests,
# google-auth and azure-identity: their conditional creates on GCS and Azure, with the default
# credentials' tokens (reconciler.connectors.storage.upload); hdfs-native: hdfs:// paths
# (reconciler.connectors.storage.hdfs).
EXECUTOR_PACKAGES = ("confluent-kafka", "pyarrow", "numpy", "pydantic", "msgspec", "botocore", "requests",
                     "google-auth", "azure-identity", "hdfs-native")
PACK_TIMEOUT_S = 900.0


class PackError(ReconcilerError):
    """The executors' environment could not be built or packed."""


def requirements() -> list[str]:
    """EXECUTOR_PACKAGES pinned to the versions installed here (unpinned if not installed)."""
    pinned = []
    for name in EXECUTOR_PACKAGES:
        try:
            pinned.append(f"{name}=={version(name)}")
        except PackageNotFoundError:
            pinned.append(name)
    return pinned


def base_python() -> str:
    """The interpreter a venv made by this Python runs (`venv` links to it, not to this venv's
    own `python`): what a packed environment depends on, whichever venv packed it."""
    return getattr(sys, "_base_executable", None) or sys.executable


def pack(output: Path, *, python: str | None = None) -> Path:
    """Build a venv with `requirements()` and venv-pack it to `output` (kept if it exists and
    was packed from the same requirements: its name's sibling `.req` file says which)."""
    python = python or base_python()
    wanted = "\n".join(requirements()) + f"\npython {python}\n"
    stamp = output.with_name(output.name + ".req")
    if output.exists() and stamp.exists() and stamp.read_text() == wanted:
        return output
    venv_pack = shutil.which("venv-pack") or str(Path(sys.executable).with_name("venv-pack"))
    if not Path(venv_pack).exists():
        raise PackError("venv-pack is not installed", hint="pip install venv-pack")
    with tempfile.TemporaryDirectory(prefix="reconciler-env-") as scratch:
        env = Path(scratch) / "env"
        # Without pip of its own (executors need none): this Python's pip installs into it.
        _run([python, "-m", "venv", "--without-pip", str(env)], "creating the virtual environment")
        _run([sys.executable, "-m", "pip", "--python", str(env / "bin" / "python"), "install", "--quiet",
              *requirements()], "installing " + ", ".join(requirements()))
        output.parent.mkdir(parents=True, exist_ok=True)
        # Its own name (two test sessions may pack into one cache at once); the format is read
        # from the suffix by venv-pack.
        partial = output.with_name(f".partial-{os.getpid()}-{output.name}")
        partial.unlink(missing_ok=True)
        _run([venv_pack, "-p", str(env), "-o", str(partial), "--quiet"], "packing with venv-pack")
        partial.replace(output)
    stamp.write_text(wanted)
    return output


KEPT = 2  # packed environments kept in the cache: this one and the one before


def cached_pack(directory: Path | None = None) -> Path:
    """`pack()` into a cache directory, under a name that says what it holds; then only the
    KEPT most recently used packs stay (each ~100 MB; one for versions no longer installed is
    never used again)."""
    wanted = "\n".join(requirements()) + base_python()  # one per interpreter, shared by every venv of it
    digest = hashlib.blake2b(wanted.encode(), digest_size=6).hexdigest()
    base = directory or cache_root() / "envs"
    path = pack(base / f"executor-env-{digest}.tar.gz")
    path.touch()  # used now: a pack kept from before counts as the newest
    prune(base)
    return path


def prune(directory: Path, kept: int = KEPT) -> None:
    """Delete all but the `kept` most recently used packs in `directory` (and their stamps)."""
    for stale in keep_newest(directory, "executor-env-*.tar.gz", kept):
        stale.with_name(stale.name + ".req").unlink(missing_ok=True)


def _run(command: list[str], what: str) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=PACK_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PackError(f"{what} failed: {exc}") from exc
    if done.returncode != 0:
        raise PackError(f"{what} failed:\n{(done.stdout + done.stderr)[-2000:]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m reconciler.devtools.pack_env",
        description="Pack the executors' Python environment (" + ", ".join(EXECUTOR_PACKAGES) + ") for spark.archives.",
    )
    parser.add_argument("output", type=Path, nargs="?",
                        help="the archive to write, e.g. executor-env.tar.gz (default: the cached one the tests use)")
    args = parser.parse_args(argv)
    try:
        path = pack(args.output) if args.output else cached_pack()
    except PackError as exc:
        print(exc.render(), file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
