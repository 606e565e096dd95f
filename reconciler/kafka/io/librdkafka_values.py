"""Whether librdkafka takes a setting's value, asked of librdkafka itself, with no client.

A value is given to `rd_kafka_conf_set` on a configuration object made for the question and
destroyed after it: the very check a client's construction runs on each setting (type, range,
enum and flag names, patterns), so `reconciler validate` and the `-X` / `--kafka-config` path
refuse exactly what a task's client would, before any task runs. Nothing connects, no thread
starts, and `confluent_kafka` is not imported: its bundled library is loaded on first use
(a few tens of milliseconds, once per process).

The library names a property by its canonical name (`queue.buffering.max.ms` for `linger.ms`);
`value_problem` words its answer with the name the user wrote, the library's in brackets.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import importlib.util
import re
from pathlib import Path
from typing import Final

# Setting it loads (and runs) the plugins it names: for a client's construction only.
NOT_CHECKED: Final = frozenset({"plugin.library.paths"})
_OK, _INVALID = 0, -1  # rd_kafka_conf_res_t (UNKNOWN, -2, is the name table's business)
# Where librdkafka's messages name the property: `… property "X" …`, `… bool value for "X": …`.
_PROPERTY = re.compile(r'(?<=property ")[^"]+(?=")|(?<=value for ")[^"]+(?=")')


def library_path() -> str:
    """The librdkafka confluent-kafka bundles (`confluent_kafka.libs` in a Linux wheel, `.dylibs`
    in a macOS one), found without importing confluent_kafka; else one on the library path."""
    spec = importlib.util.find_spec("confluent_kafka")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for package in map(Path, locations):
        bundled = sorted([*(package.parent / "confluent_kafka.libs").glob("librdkafka*"),
                          *(package / ".dylibs").glob("librdkafka*")])
        if bundled:
            return str(bundled[0])
    name = ctypes.util.find_library("rdkafka")
    if name is None:
        raise RuntimeError("librdkafka not found next to confluent_kafka nor on the library path")
    return name


@functools.cache
def library() -> ctypes.CDLL:
    lib = ctypes.CDLL(library_path())
    lib.rd_kafka_conf_new.restype = ctypes.c_void_p
    lib.rd_kafka_conf_new.argtypes = []
    lib.rd_kafka_conf_set.restype = ctypes.c_int
    lib.rd_kafka_conf_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.rd_kafka_conf_destroy.restype = None
    lib.rd_kafka_conf_destroy.argtypes = [ctypes.c_void_p]
    return lib


def value_problem(name: str, value: str, written: str | None = None) -> str | None:
    """Why librdkafka refuses `value` for its setting `name`, or None when it takes it.

    `written`: the name the user wrote (a Java name translated to `name`), which the answer
    uses; librdkafka's own name follows in brackets when it is another."""
    if name in NOT_CHECKED:
        return None
    try:
        lib = library()
    except (OSError, RuntimeError):
        return None  # a librdkafka this cannot find: the client's construction still checks the value
    conf = lib.rd_kafka_conf_new()
    errstr = ctypes.create_string_buffer(512)
    try:
        result = lib.rd_kafka_conf_set(conf, name.encode(), value.encode(), errstr, len(errstr))
    finally:
        lib.rd_kafka_conf_destroy(conf)
    if result != _INVALID:
        return None
    return _worded(errstr.value.decode(errors="replace").strip(), written or name, value)


def _worded(reason: str, written: str, value: str) -> str:
    own = _PROPERTY.search(reason)
    if own is not None and own.group(0) != written:
        reason = _PROPERTY.sub(written, reason) + f" (librdkafka: {own.group(0)})"
    if reason.startswith("Invalid value for "):  # an integer or number that did not parse: say what did not
        reason += f"; got {value!r}"
    return reason
