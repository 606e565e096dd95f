"""Read both tables back with their own readers (delta-rs, pyiceberg) and count their rows."""

from __future__ import annotations

from deltalake import DeltaTable
from pyiceberg.catalog.sql import SqlCatalog


def main() -> None:
    delta = DeltaTable("lake/delta/orders").to_pyarrow_table()
    catalog = SqlCatalog("iceberg", uri="sqlite:///lake/iceberg-catalog.db", warehouse="lake/warehouse")
    iceberg = catalog.load_table("shop.orders").scan().to_arrow()
    for name, table in (("delta", delta), ("iceberg", iceberg)):
        ids = table.column("id").to_pylist()
        print(f"{name}: {table.num_rows} rows, {len(set(ids))} distinct ids")


if __name__ == "__main__":
    main()
