"""Running Debian's `kcat` as the reference client against the test broker.

Debian's kcat links the system librdkafka (2.0), older than the one our clients use
(docs/real-components.md#kcat). kcat is run on the librdkafka bundled in the confluent-kafka
wheel instead, but auditwheel renamed it (`librdkafka-<hash>.so.1`), so LD_LIBRARY_PATH alone
does not find it: we point it at a directory holding a `librdkafka.so.1` symlink to the bundled
file.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import confluent_kafka


def kcat_binary() -> str:
    found = shutil.which("kcat") or shutil.which("kafkacat")
    if found is None:
        raise SystemExit("kcat not found: install it with `apt-get install kcat`")
    return found


def kcat_env_if_installed() -> dict[str, str] | None:
    """kcat's environment, or None when kcat is not installed."""
    if shutil.which("kcat") is None and shutil.which("kafkacat") is None:
        return None
    return kcat_env()


def kcat_env() -> dict[str, str]:
    libs = Path(confluent_kafka.__file__).resolve().parents[1] / "confluent_kafka.libs"
    bundled = sorted(libs.glob("librdkafka*.so*"))
    if not bundled:
        raise SystemExit(f"no bundled librdkafka in {libs}")
    shim = Path(tempfile.mkdtemp(prefix="kcat-librdkafka-"))
    (shim / "librdkafka.so.1").symlink_to(bundled[0])
    return {**os.environ, "LD_LIBRARY_PATH": f"{shim}:{libs}"}
