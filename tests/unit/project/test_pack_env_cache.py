"""The executors' packed environments in the cache: the two most recently used stay."""

from __future__ import annotations

import os
from pathlib import Path

from reconciler.devtools.pack_env import prune


def test_only_the_two_most_recently_used_packs_and_their_stamps_stay(tmp_path: Path) -> None:
    for age, name in enumerate(["d", "c", "b", "a"]):  # "a" the oldest
        pack = tmp_path / f"executor-env-{name}.tar.gz"
        pack.write_bytes(b"x")
        (tmp_path / f"{pack.name}.req").write_text("req")
        os.utime(pack, ns=(10**18 - age * 10**9, 10**18 - age * 10**9))
    (tmp_path / "unrelated.txt").write_text("kept")

    prune(tmp_path)

    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "executor-env-c.tar.gz", "executor-env-c.tar.gz.req",
        "executor-env-d.tar.gz", "executor-env-d.tar.gz.req",
        "unrelated.txt",
    ]
