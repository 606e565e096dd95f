"""`javamap`: Java's `String.hashCode` and `HashMap` iteration order, checked against what a
real JVM printed (Java 17; the orders come from `tests/fixtures/java-hashmap/HashMapOrder.java`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.kafka.formats.javamap import TreeBinReached, hashmap_order, map_in_java_order, spread, string_hash

ORDERS = Path(__file__).resolve().parents[2] / "fixtures" / "java-hashmap" / "orders.tsv"


def _cases() -> list[tuple[list[str], list[str]]]:
    cases = []
    for line in ORDERS.read_text(encoding="utf-8").splitlines():
        given, java = line.split("\t|\t")
        cases.append((given.split("\t"), java.split("\t")))
    return cases


@pytest.mark.parametrize(
    ("text", "java"),
    [("", 0), ("a", 97), ("ab", 3105), ("Aa", 2112), ("BB", 2112), ("table", 110115790),
     ("kafka_partition", 164973841), ("😀", 1772899), ("\ud800", 0xD800)],
)
def test_string_hash_is_javas(text: str, java: int) -> None:
    assert string_hash(text) == java


def test_spread_folds_the_high_half() -> None:
    assert spread(0x12345678) == 0x12345678 ^ 0x1234
    assert spread(0xFFFF0000) == 0xFFFFFFFF


def test_orders_match_a_real_jvm() -> None:
    cases = _cases()
    checked = refused = 0
    for given, java in cases:
        try:
            ours = hashmap_order(given)
        except TreeBinReached:
            refused += 1  # a red-black tree bin: not modelled, and said so
            continue
        assert ours == java, given
        checked += 1
    # Three cases pile 9+ keys into one bin of a 64-bin table on purpose (a tree bin in Java).
    assert checked == len(cases) - 3 and refused == 3
    # The fixture covers what matters: both orders of a two-field partition give one order,
    # tables that grew (16 → 32 → 64 and beyond) and bins that forced treeifyBin's early resize.
    sizes = {len(given) for given, _ in cases}
    assert {2, 13, 25, 40, 48} <= sizes


def test_insertion_order_decides_only_within_a_bin() -> None:
    # "Aa" and "BB" have the same hash: they share a bin, so the first put comes first.
    assert hashmap_order(["Aa", "BB"]) == ["Aa", "BB"]
    assert hashmap_order(["BB", "Aa"]) == ["BB", "Aa"]
    assert hashmap_order(["table", "schema"]) == hashmap_order(["schema", "table"]) == ["schema", "table"]


def test_a_repeated_key_keeps_its_place() -> None:
    assert hashmap_order(["b", "a", "b"]) == hashmap_order(["b", "a"])


def test_map_in_java_order_keeps_values_and_falls_back_on_a_tree_bin() -> None:
    assert list(map_in_java_order({"shard": 2, "region": "eu"}).items()) == [("shard", 2), ("region", "eu")]
    tree = next(given for given, _ in _cases() if _raises(given))
    mapping = {key: i for i, key in enumerate(tree)}
    assert list(map_in_java_order(mapping)) == tree


def _raises(keys: list[str]) -> bool:
    try:
        hashmap_order(keys)
    except TreeBinReached:
        return True
    return False
