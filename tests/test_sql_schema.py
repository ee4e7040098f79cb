"""A workload declares its table once (``asyncbench.store.Table``); every SQL engine writes
the DDL in its own flavour (``Dialect.create``). The profile store's declaration names the
columns in the order its statements use and the indexes its index hints name; each
engine's DDL holds them all, every column NOT NULL."""

from __future__ import annotations

import re
import sqlite3

import pytest

from asyncbench.engines import mysql, postgres, sqlite
from asyncbench.store import Column, Dialect, Index, Table
from asyncbench.workloads.profile_store.sql_store import COLUMNS, INDEXES, PROFILES_TABLE, TABLE, UNIQUE_EMAIL
from asyncbench.workloads.ycsb.sql_store import usertable

DIALECTS = {
    "sqlite": sqlite.DIALECT,
    "postgres": postgres.DIALECT,
    "mysql": mysql.dialect("utf8mb4_bin"),
}


def test_the_profile_table_declares_the_statements_columns_in_order() -> None:
    assert [c.name for c in PROFILES_TABLE.columns] == COLUMNS.split(", ")
    assert PROFILES_TABLE.name == TABLE and PROFILES_TABLE.key == "user_id"
    indexes = {i.name: (", ".join(i.columns), i.unique) for i in PROFILES_TABLE.indexes}
    assert indexes == {UNIQUE_EMAIL: ("email", True), **{n: (c, False) for n, c in INDEXES.items()}}


@pytest.mark.parametrize("engine", sorted(DIALECTS))
def test_every_engine_writes_every_column_not_null_and_every_index(engine: str) -> None:
    text = "\n".join(DIALECTS[engine].create(PROFILES_TABLE))
    table = text.split("(", 1)[1]
    declared = re.findall(r"^\s+(\w+) .* NOT NULL,?$", table, flags=re.M)
    assert declared[: len(PROFILES_TABLE.columns)] == COLUMNS.split(", ")
    for name, cols in INDEXES.items():
        assert f"{name} ON {TABLE} ({cols})" in text or f"KEY {name} ({cols})" in text, (engine, name)
    assert f"UNIQUE INDEX IF NOT EXISTS {UNIQUE_EMAIL} ON {TABLE} (email)" in text or f"UNIQUE KEY {UNIQUE_EMAIL} (email)" in text


def test_mysql_writes_its_bounds_and_collation() -> None:
    text = "\n".join(mysql.dialect("utf8mb4_nopad_bin").create(PROFILES_TABLE))
    assert "email VARCHAR(255) NOT NULL" in text and "bio VARCHAR(4096) NOT NULL" in text
    assert text.endswith("ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin")
    assert len(mysql.dialect("x").create(PROFILES_TABLE)) == 1  # one atomic statement


def test_the_sqlite_ddl_makes_the_rowid_table_with_its_indexes() -> None:
    conn = sqlite3.connect(":memory:")
    for statement in sqlite.DIALECT.create(PROFILES_TABLE):
        conn.execute(statement)
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert set(INDEXES) | {UNIQUE_EMAIL} <= names
    conn.execute(f"INSERT INTO {TABLE} ({COLUMNS}) VALUES (7, 'a@b', 'DE', 'x', 1, 2, 3, 'n', 'b')")
    assert conn.execute(f"SELECT rowid FROM {TABLE}").fetchone() == (7,)  # user_id is the rowid
    with pytest.raises(sqlite3.IntegrityError):  # NOT NULL holds
        conn.execute(f"INSERT INTO {TABLE} ({COLUMNS}) VALUES (8, 'c@d', NULL, 'x', 1, 2, 3, 'n', 'b')")


def test_the_ycsb_usertable_is_a_text_key_and_blob_fields() -> None:
    text = postgres.DIALECT.create(usertable(3))[0]
    assert 'ycsb_key TEXT COLLATE "C" NOT NULL' in text and "field2 BYTEA NOT NULL" in text
    assert "PRIMARY KEY (ycsb_key)" in text


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: Table("t; DROP TABLE x", (Column("a", "integer"),), key="a"), "plain SQL identifiers"),
        (lambda: Table("t", (Column("a", "integer"),), key="b"), "hold \\['b'\\]"),
        (lambda: Table("t", (Column("a", "integer"),), key="a", indexes=(Index("i", ("a ASC",)),)), "identifiers"),
        (lambda: Table("t", (Column("a", "integer"), Column("a", "text")), key="a"), "distinct"),
        (lambda: Column("a", "float"), "kind must be one of"),
    ],
)
def test_a_bad_declaration_is_refused(build: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        build()  # type: ignore[operator]


def test_a_plain_dialect_writes_standard_sql() -> None:
    t = Table("t", (Column("k", "text", 10), Column("v", "blob")), key="k", indexes=(Index("t_v", ("v DESC",)),))
    assert Dialect(placeholder=lambda i: "?").create(t) == [
        "CREATE TABLE IF NOT EXISTS t (\n    k TEXT NOT NULL,\n    v BLOB NOT NULL,\n    PRIMARY KEY (k)\n)",
        "CREATE INDEX IF NOT EXISTS t_v ON t (v DESC)",
    ]
