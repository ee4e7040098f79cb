"""``python -m asyncbench engines``: what each engine is and the settings a plan may give it,
with the value a setting left empty really takes (issue 39)."""

from __future__ import annotations

import pytest

from asyncbench.cli.main import main


@pytest.fixture
def listing(capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["engines"]) == 0
    return capsys.readouterr().out


def _block(listing: str, name: str) -> list[str]:
    lines = listing.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{name}  ("))
    end = next((i for i in range(start + 1, len(lines)) if lines[i] and not lines[i].startswith(" ")), len(lines))
    return lines[start + 1 : end]


def test_server_settings_show_their_effective_default_and_its_source(listing: str) -> None:
    """mysql showed host '', port 0, database '' (the defaults are 127.0.0.1, 3306, asyncbench)."""
    mysql = "\n".join(_block(listing, "mysql"))
    assert "[engines.mysql] host = '' (MYSQL_HOST, else '127.0.0.1')" in mysql
    assert "[engines.mysql] port = 0 (MYSQL_PORT, else 3306)" in mysql
    assert "[engines.mysql] database = '' (MYSQL_DATABASE, else 'asyncbench')" in mysql
    postgres = "\n".join(_block(listing, "postgres"))
    assert "[engines.postgres] port = 0 (PGPORT, else 5432)" in postgres


@pytest.mark.parametrize("name", ["memory", "lsm", "rocksdb", "lmdb", "sqlite", "mysql", "postgres"])
def test_every_engine_says_what_it_is_in_a_paragraph(listing: str, name: str) -> None:
    """mysql's description stopped at "see the module"; lsm, rocksdb, sqlite and memory had none."""
    description = []
    for line in _block(listing, name):
        if line.lstrip().startswith(("[engines.", "settings:")):
            break
        description.append(line.strip())
    text = " ".join(description)
    assert len(text) >= 80 and text.endswith("."), (name, text)
    assert "see the module" not in text
    assert all(len(line) <= 80 for line in _block(listing, name) if not line.lstrip().startswith("[engines."))
