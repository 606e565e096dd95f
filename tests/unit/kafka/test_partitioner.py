"""Java's murmur2 key partitioner (Utils.murmur2 / BuiltInPartitioner.partitionForKey)."""

from __future__ import annotations

import pytest

from reconciler.kafka.formats.partitioner import murmur2, partition_for

# apache/kafka clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java#testMurmur2
JAVA_VECTORS = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
]


@pytest.mark.parametrize(("key", "expected"), JAVA_VECTORS)
def test_murmur2_matches_java(key: bytes, expected: int) -> None:
    assert murmur2(key) == expected


@pytest.mark.parametrize("length", range(0, 9))
def test_every_tail_length_is_a_signed_int32(length: int) -> None:
    value = murmur2(bytes(range(200, 200 + length)))  # bytes ≥ 0x80: Java masks them with & 0xff
    assert -(2**31) <= value < 2**31


def test_partition_is_positive_hash_modulo_count() -> None:
    # murmur2("21") is negative: toPositive keeps the low 31 bits before the modulo.
    assert partition_for(b"21", 5) == (-973932308 & 0x7FFFFFFF) % 5 == 0
    assert partition_for(b"abc", 25) == 479470107 % 25 == 7
    assert partition_for(b"anything", 1) == 0


def test_partition_count_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        partition_for(b"k", 0)
