"""The example's database side: `seed N` adds N orders (and touches some existing ones, so the
copy sees updates); `compare` prints both tables' row counts and whether they are equal."""

from __future__ import annotations

import sys
from pathlib import Path

import psycopg

TABLE = """CREATE TABLE IF NOT EXISTS orders (
    id bigserial PRIMARY KEY,
    customer text NOT NULL,
    amount numeric(10, 2) NOT NULL,
    updated_at timestamp(3) NOT NULL DEFAULT clock_timestamp())"""
COLUMNS = "id, customer, amount, updated_at"


def dsn() -> str:
    return Path(".postgres.dsn").read_text().strip()


def seed(count: int) -> None:
    with psycopg.connect(dsn(), autocommit=True) as connection:
        connection.execute("SET TIME ZONE 'UTC'")  # the connectors' db.timezone: timestamps are UTC
        connection.execute(TABLE)
        connection.execute("UPDATE orders SET amount = amount + 1, updated_at = clock_timestamp() WHERE id % 10 = 0")
        connection.execute("INSERT INTO orders (customer, amount) SELECT 'customer ' || i, i / 100.0 "
                           "FROM generate_series(1, %s) i", [count])


def compare() -> None:
    with psycopg.connect(dsn()) as connection:
        source = connection.execute(f"SELECT {COLUMNS} FROM orders ORDER BY id").fetchall()
        copy = connection.execute(f"SELECT {COLUMNS} FROM orders_copy ORDER BY id").fetchall()
    print(f"orders: {len(source)} rows, orders_copy: {len(copy)} rows, {'equal' if source == copy else 'DIFFERENT'}")


if __name__ == "__main__":
    if sys.argv[1] == "seed":
        seed(int(sys.argv[2]))
    else:
        compare()
