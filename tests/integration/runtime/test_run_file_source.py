"""`file-source` under the worker: appended lines and new files are picked up on later ticks,
each line exactly once, a line still being written only once it is complete — and through the
sink into Parquet, exactly once as well."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from run_support import Pipeline, parquet_keys, pipeline, topic_keys

__all__ = ["pipeline"]  # the fixture


def lines(*numbers: int) -> str:
    return "".join(f'{{"n": {n}}}\n' for n in numbers)


def test_file_source_picks_up_appended_lines_and_new_files_once(pipeline: Pipeline, tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "a.jsonl").write_text(lines(1, 2, 3))
    topic = pipeline.topic("lines", 2)
    out = tmp_path / "parquet"
    pipeline.connector("files", "file-source", {"path": str(inbox), "topic": topic, "format": "jsonl"}, tasks_max=2)
    pipeline.connector("archive", "parquet-sink", {"topics": topic, "path": str(out)}, tasks_max=2)

    def values() -> Counter[bytes]:
        from reconciler.kafka.io.consume import read_to_end

        return Counter(m.value or b"" for m in read_to_end(pipeline.settings, topic))

    def expected(*numbers: int) -> Counter[bytes]:
        return Counter(f'{{"n": {n}}}'.encode() for n in numbers)

    pipeline.tick()
    assert values() == expected(1, 2, 3)

    with (inbox / "a.jsonl").open("a") as f:
        f.write(lines(4, 5) + '{"n": 6}')  # the last line is still being written
    (inbox / "b.jsonl").write_text(lines(10, 11))
    (inbox / ".c.jsonl.swp").write_text(lines(99))  # hidden files are not read
    pipeline.tick()
    assert values() == expected(1, 2, 3, 4, 5, 10, 11)

    with (inbox / "a.jsonl").open("a") as f:
        f.write("\n")
    pipeline.tick()
    assert values() == expected(1, 2, 3, 4, 5, 6, 10, 11)
    pipeline.tick()
    assert values() == expected(1, 2, 3, 4, 5, 6, 10, 11)  # nothing new: nothing produced

    keys = topic_keys(pipeline.settings, topic)
    assert sum(keys.values()) == 8 and set(keys.values()) == {1}  # keys are file:line, unique
    assert parquet_keys(out) == keys  # the sink archived each line once
    assert pipeline.states("files") == ("RUNNING", {0: "RUNNING", 1: "RUNNING"})
