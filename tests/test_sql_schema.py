"""Every SQL engine's ``profiles`` DDL names the columns, in order, and the indexes the
profile store's statements use (workloads/profile_store/sql_store.py: table, column order,
index names and columns); each engine writes its own types and layout (until workloads
declare their tables to the engines)."""

from __future__ import annotations

import hashlib
import re
import sqlite3

import pytest

from asyncbench.engines import mysql, postgres, sqlite
from asyncbench.workloads.profile_store.sql_store import COLUMNS, INDEXES, TABLE, UNIQUE_EMAIL, create_table

SCHEMAS = {
    "sqlite": "\n".join(sqlite.SCHEMA),
    "postgres": "\n".join(postgres.SCHEMA),
    "mysql": mysql.SCHEMA,
}


@pytest.mark.parametrize("engine", sorted(SCHEMAS))
def test_every_engine_names_the_same_columns_in_order_and_the_same_indexes(engine: str) -> None:
    text = SCHEMAS[engine]
    table = text.split("(", 1)[1]
    assert re.findall(r"^\s+(\w+) [A-Z]", table, flags=re.M)[: len(COLUMNS.split(", "))] == COLUMNS.split(", ")
    for name, cols in INDEXES.items():
        assert f"{name} ON {TABLE} ({cols})" in text or f"KEY {name} ({cols})" in text, (engine, name)
    assert engine == "sqlite" or UNIQUE_EMAIL in text


def test_the_sqlite_schema_text_is_the_one_existing_stores_hold() -> None:
    """check_schema compares an existing store's stored DDL text byte for byte: any change
    of this text (even whitespace) would refuse every store made before it."""
    digest = hashlib.sha256("\n;\n".join(sqlite.SCHEMA).encode()).hexdigest()
    assert digest == "93b78eb049f6ef45d8a504e3cd7348fea030ac08787d06ad0aeff169bb307057"


def test_the_sqlite_schema_makes_the_rowid_table_with_its_indexes() -> None:
    conn = sqlite3.connect(":memory:")
    for statement in sqlite.SCHEMA:
        conn.execute(statement)
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert set(INDEXES) <= names
    conn.execute(f"INSERT INTO {TABLE} ({COLUMNS}) VALUES (7, 'a@b', 'DE', 'x', 1, 2, 3, 'n', 'b')")
    assert conn.execute(f"SELECT rowid FROM {TABLE}").fetchone() == (7,)  # user_id is the rowid


def test_column_types_must_follow_the_column_order() -> None:
    types = dict.fromkeys(reversed(COLUMNS.split(", ")), "TEXT")
    with pytest.raises(ValueError, match="in order"):
        create_table(types)
