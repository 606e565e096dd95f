"""The order in which a Java `HashMap<String, ?>` iterates its keys. Pure.

Java re-serialises a source partition it parsed back from JSON in that order whenever it looks
an offset up or writes one, so a key we mint in any other order is a different key to Java.
The algorithm, and the one case (tree bins) it refuses to guess: docs/record-formats.md#map-order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeVar

DEFAULT_CAPACITY = 16
LOAD_FACTOR = 0.75
TREEIFY_THRESHOLD = 8
MIN_TREEIFY_CAPACITY = 64
_MASK32 = 0xFFFFFFFF

V = TypeVar("V")


class TreeBinReached(ValueError):
    """A bin would become a red-black tree, whose iteration order this module does not model."""


def string_hash(text: str) -> int:
    """Java's `String.hashCode()` as an unsigned 32-bit value: s[0]·31^(n-1) + … + s[n-1]."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")  # Java strings are UTF-16 code units
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & _MASK32
    return h


def spread(h: int) -> int:
    """`HashMap.hash`: the high half folded into the low half, so small tables use it too."""
    return (h ^ (h >> 16)) & _MASK32


def hashmap_order(keys: Iterable[str]) -> list[str]:
    """The iteration order of `new HashMap<>()` after `put(key, …)` for each key in turn."""
    capacity, threshold = DEFAULT_CAPACITY, int(DEFAULT_CAPACITY * LOAD_FACTOR)
    bins: list[list[tuple[int, str]]] = [[] for _ in range(capacity)]
    present: set[str] = set()
    for key in keys:
        if key in present:  # an update keeps the node where it is
            continue
        present.add(key)
        h = spread(string_hash(key))
        chain = bins[h & (capacity - 1)]
        chain.append((h, key))
        if len(chain) > TREEIFY_THRESHOLD:  # `putVal` calls treeifyBin at the 9th node
            if capacity >= MIN_TREEIFY_CAPACITY:
                raise TreeBinReached(f"{len(chain)} keys share bin {h & (capacity - 1)} of {capacity}")
            bins, capacity, threshold = _resize(bins, capacity, threshold)
        if len(present) > threshold:
            bins, capacity, threshold = _resize(bins, capacity, threshold)
    return [key for chain in bins for _, key in chain]


def _resize(
    bins: list[list[tuple[int, str]]], capacity: int, threshold: int
) -> tuple[list[list[tuple[int, str]]], int, int]:
    """`HashMap.resize`: twice the bins; bin j splits into j and j + old capacity, in order."""
    grown: list[list[tuple[int, str]]] = [[] for _ in range(capacity * 2)]
    for j, chain in enumerate(bins):
        for node in chain:
            grown[j + capacity if node[0] & capacity else j].append(node)
    return grown, capacity * 2, threshold * 2


def map_in_java_order(mapping: Mapping[str, V]) -> dict[str, V]:
    """`mapping` re-ordered as Java's HashMap of it would iterate (its own order if a tree bin)."""
    try:
        order = hashmap_order(mapping)
    except TreeBinReached:
        return dict(mapping)
    return {key: mapping[key] for key in order}
