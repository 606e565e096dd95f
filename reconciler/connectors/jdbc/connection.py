"""The database connection both JDBC connectors use: psycopg connected to a `config.Target`,
and every database error turned into one `ConnectorError` line naming the place (host, port,
database, table, column) and never the password.
"""

from __future__ import annotations

import re
from typing import Any, Literal

import psycopg
from psycopg.conninfo import make_conninfo

from reconciler.connectors.api import ConnectorError
from reconciler.connectors.jdbc.config import Target

CONNECT_TIMEOUT_S = 10
_COPY_COLUMN = re.compile(r"column (.+?): ")


def connect(target: Target) -> psycopg.Connection[Any]:
    """An autocommit connection (transactions are explicit blocks), or one ConnectorError line."""
    try:
        conninfo = make_conninfo("", **target.connect_args(), connect_timeout=CONNECT_TIMEOUT_S)
        return psycopg.connect(conninfo, autocommit=True)
    except psycopg.Error as exc:
        user = f" as {target.user}" if target.user else ""
        raise ConnectorError(f"cannot connect to PostgreSQL at {target.describe()}{user}: "
                             f"{one_line(target, str(exc))}") from None


def one_line(target: Target, text: str) -> str:
    """`text` on one line, with the password (should the server ever quote it) hidden."""
    line = " ".join(part.strip() for part in text.splitlines() if part.strip())
    return line.replace(target.password, "[hidden]") if target.password else line


class Failing:
    """Turns a database error inside the block into one ConnectorError line:
    `cannot <verb> <place>[, column C] in host:port/db: <the server's message>`."""

    def __init__(self, target: Target, place: str, verb: str = "write to") -> None:
        self.target, self.place, self.verb = target, place, verb

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> Literal[False]:
        if not isinstance(exc, psycopg.Error):
            return False
        diag = exc.diag
        column = diag.column_name or next(iter(_COPY_COLUMN.findall(diag.context or "")), None)
        where = f"{self.place}" + (f", column {column}" if column else "")
        message = diag.message_primary or str(exc)
        raise ConnectorError(f"cannot {self.verb} {where} in {self.target.describe()}: "
                             f"{one_line(self.target, message)}") from None
