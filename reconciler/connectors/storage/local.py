"""A local disk's writes, whole or not at all and durable: a temporary file, fsync, rename, fsync
of the directory (the store's FILE scheme; docs/connectors.md#storage)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

TEMP_SUFFIX = ".tmp"

Writer = Callable[[BinaryIO], object]


def write_local(target: Path, write: Writer) -> None:
    """Whole or not at all, durable once this returns."""
    make_dirs(target.parent)
    temp = target.with_name(f".{target.name}{TEMP_SUFFIX}")
    try:
        with temp.open("wb") as out:
            write(out)
        fsync(temp)
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    fsync(target.parent)


def fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_dirs(directory: Path) -> None:
    """mkdir -p that also makes the new directory entries durable."""
    if directory.is_dir():
        return
    make_dirs(directory.parent)
    directory.mkdir(exist_ok=True)
    fsync(directory.parent)
