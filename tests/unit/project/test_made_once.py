"""Tools built into the cache (Azurite's npm install, the GCS server's go build): made in a
staging directory and renamed into place, so a failed or concurrent build leaves no half of one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from reconciler.toolchain.caches import made_once


def test_a_build_is_seen_whole_or_not_at_all_and_the_first_of_two_stays(tmp_path: Path) -> None:
    home = tmp_path / "tool" / "abc"

    def broken(into: Path) -> None:
        (into / "half").write_text("x")
        raise RuntimeError("the build failed")

    with pytest.raises(RuntimeError, match="the build failed"):
        made_once(home, broken)
    assert not home.exists() and list(home.parent.iterdir()) == []

    def build(text: str) -> Callable[[Path], None]:
        def make(into: Path) -> None:
            (into / "bin").write_text(text)
            if text == "second":  # finishes after a concurrent build already renamed its own
                made_once(home, build("first"))
        return make

    assert made_once(home, build("second")) == home
    assert (home / "bin").read_text() == "first" and [p.name for p in home.parent.iterdir()] == ["abc"]
