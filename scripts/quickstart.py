"""Print what the quickstart's parquet-sink wrote: rows per file and partition, the total, and
whether every datagen id arrived exactly once.

    python scripts/quickstart.py .quickstart/orders-parquet --expect 20000
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", type=Path, help="the parquet-sink's `path`")
    parser.add_argument("--expect", type=int, default=None, help="the number of distinct ids expected")
    args = parser.parse_args(argv)
    # Readers skip `_…` and `.…` entries (superseded files, temporary files), as Spark does.
    files = sorted(p for p in args.path.rglob("*.parquet") if not any(part[0] in "._" for part in p.relative_to(args.path).parts))
    if not files:
        print(f"no Parquet files under {args.path}")
        return 1
    per_partition: Counter[str] = Counter()
    ids: Counter[bytes] = Counter()
    print(f"Parquet files under {args.path}:")
    for file in files:
        table = pq.read_table(file, columns=["key"])
        partition = str(file.parent.relative_to(args.path))
        per_partition[partition] += table.num_rows
        ids.update(table.column("key").to_pylist())
        print(f"  {file.relative_to(args.path)}: {table.num_rows} rows")
    print("rows per partition:")
    for partition, rows in sorted(per_partition.items()):
        print(f"  {partition}: {rows}")
    total = sum(per_partition.values())
    duplicates = sum(n - 1 for n in ids.values() if n > 1)
    print(f"total: {total} rows in {len(files)} file(s), {len(ids)} distinct ids, {duplicates} duplicate(s)")
    if args.expect is not None and (len(ids) != args.expect or duplicates):
        print(f"expected exactly {args.expect} distinct ids, each once", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
