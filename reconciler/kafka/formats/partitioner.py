"""Java's default key partitioner, so records we write land where a Java producer would put them.

`org.apache.kafka.common.utils.Utils.murmur2` (seed 0x9747b28c) and
`BuiltInPartitioner.partitionForKey`: `toPositive(murmur2(key)) % numPartitions`. The I/O layer
configures librdkafka with `partitioner=murmur2_random`, which computes the same for non-empty
keys; this module lets tests (and the offsets writer) check that placement without a broker.
"""

from __future__ import annotations

import struct

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF
_WORDS = struct.Struct("<I")


def murmur2(data: bytes) -> int:
    """The 32-bit MurmurHash2 of `data`, as Java's signed `int`."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    body = length & ~3
    for (k,) in _WORDS.iter_unpack(data[:body]):
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = length & 3
    if tail == 3:
        h ^= data[body + 2] << 16
    if tail >= 2:
        h ^= data[body + 1] << 8
    if tail >= 1:
        h ^= data[body]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - 0x100000000 if h & 0x80000000 else h


def partition_for(key: bytes, num_partitions: int) -> int:
    """The partition a Java producer picks for a keyed record."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions
