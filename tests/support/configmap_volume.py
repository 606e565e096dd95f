"""A directory updated the way the kubelet's AtomicWriter updates a ConfigMap volume: each
version in a `..<timestamp>` directory, `..data` switched to it by an atomic rename, the files
symlinks through `..data`, the old version removed. `watch` must see each publish as one edit."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


class ConfigMapVolume:
    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir()
        self.version = 0

    def publish(self, files: dict[str, str]) -> None:
        self.version += 1
        data = f"..2026_01_01_00_00_{self.version:02d}.{self.version:09d}"
        (self.root / data).mkdir()
        for name, text in files.items():
            (self.root / data / name).write_text(text)
        current = self.root / "..data"
        old = os.readlink(current) if current.is_symlink() else None
        os.symlink(data, self.root / "..data_tmp")
        os.rename(self.root / "..data_tmp", current)  # the atomic switch
        for name in files:
            if not (self.root / name).is_symlink():
                os.symlink(f"..data/{name}", self.root / name)
        for entry in self.root.iterdir():
            if entry.is_symlink() and not entry.name.startswith("..") and entry.name not in files:
                entry.unlink()
        if old is not None:
            shutil.rmtree(self.root / old)
