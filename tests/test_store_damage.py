"""Damaged stores of RocksDB and SQLite are refused with an error naming the file, never
opened as less data (issue 23 items 2-4). The LSM's own cases are in test_lsm_damage.py;
every file engine against every kind of damage is tests/test_corruption_matrix.py."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import anyio
import pytest
from conftest import store_of

from asyncbench.engine import EngineConfig, opened
from asyncbench.engines import engine_class, store_dir
from asyncbench.engines.rocksdb import RocksKv
from asyncbench.engines.store_dir import MARKER, StoreDamaged, StoreDirError
from asyncbench.workloads.profile_store.generate import create_many
from asyncbench.workloads.profile_store.kv_store import STORE_NAMES as PROFILE_STORES
from asyncbench.workloads.profile_store.profiles import decode

SEED = 7
N = 1_500


def config(engine: str, directory: Path) -> EngineConfig:
    settings = {"write_buffer_size_mb": 1} if engine == "rocksdb" else {}
    return EngineConfig(engine, directory, settings, limit=10**9, seed=SEED, stores=PROFILE_STORES)


def build(engine: str, directory: Path) -> None:
    async def main() -> None:
        async with opened(engine_class(engine)(config(engine, directory)), True) as e:
            await store_of(e).insert(create_many(1, N, SEED), [])
            await e.stabilize()

    anyio.run(main)


def read_back(engine: str, directory: Path) -> tuple[int, list[bytes | tuple], list[int]]:
    """Count, every profile by id, and the whole reputation index (a scan)."""

    async def main() -> tuple[int, list, list[int]]:
        async with opened(engine_class(engine)(config(engine, directory)), False) as e:
            w = store_of(e)
            return await w.count(), await w.read_by_id(list(range(1, N + 1)), []), await w.scan_top_reputation(1, [])

    return anyio.run(main)


def refusal(engine: str, directory: Path) -> BaseException:
    """The one error a reopen raised (through ``opened``'s task group)."""
    try:
        read_back(engine, directory)
    except BaseException as exc:  # noqa: BLE001 - unwrapped below
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
        return exc
    raise AssertionError("the damaged store opened")


def files(directory: Path) -> dict[str, bytes]:
    """Every file of the store but the marker (which an open may mark "in use")."""
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and p.name != MARKER
    }


def forget_record(directory: Path) -> None:
    """Drop the record of the last clean close from the marker (as after a crash), so
    only the engine's own checks stand between the damage and the data."""
    doc = json.loads((directory / MARKER).read_text())
    doc.pop("contents", None)
    (directory / MARKER).write_text(json.dumps(doc))


# --- item 2: a RocksDB MANIFEST cut in half --------------------------------------------------


def test_rocksdb_manifest_cut_in_half_is_refused_and_nothing_is_deleted(tmp_path: Path) -> None:
    """RocksDB (paranoid checks or not) read the half MANIFEST as an empty database and
    deleted the index's .sst at open: the store opened with an empty index, exit 0."""
    d = tmp_path / "rocksdb"
    build("rocksdb", d)
    (manifest,) = (d / "created-at-index").glob("MANIFEST-*")
    manifest.write_bytes(manifest.read_bytes()[: manifest.stat().st_size // 2])
    before = files(d)
    err = refusal("rocksdb", d)
    assert isinstance(err, StoreDamaged) and str(manifest) in str(err) and "bytes, was" in str(err)
    assert files(d) == before  # no .sst deleted, no database created


# --- item 3: RocksDB iterators check their status --------------------------------------------


def flip_sst(db_dir: Path) -> Path:
    (sst,) = db_dir.glob("*.sst")
    data = bytearray(sst.read_bytes())
    data[len(data) // 3] ^= 0xFF  # inside a data block
    sst.write_bytes(bytes(data))
    return sst


def test_rocksdb_scan_over_a_corrupt_block_raises_not_returns_short(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rocksdict's key iterator ended at the corrupt block without an error (a short scan,
    a wrong checksum, exit 0); the raw iterator's status names the file. The record of the
    clean close sums only small files, so a large .sst is left to RocksDB's block checks:
    here every file counts as large."""
    monkeypatch.setattr(store_dir, "SUMMED_BYTES", 0)
    d = tmp_path / "rocksdb"
    build("rocksdb", d)
    sst = flip_sst(d / "reputation-index")
    err = refusal("rocksdb", d)
    assert "Corruption" in str(err) and str(sst) in str(err)


@pytest.mark.parametrize("call", ["scan", "scan-bounded", "count", "items"])
def test_every_rocksdb_iteration_checks_its_status(tmp_path: Path, call: str) -> None:
    import rocksdict

    db = rocksdict.Rdict(str(tmp_path), rocksdict.Options(raw_mode=True))
    for i in range(3000):
        db.put(b"k%06d" % i, b"v" * 40)
    db.close()
    sst = flip_sst(tmp_path)
    db = rocksdict.Rdict(str(tmp_path), rocksdict.Options(raw_mode=True))
    kv = RocksKv(db)
    try:
        with pytest.raises(Exception, match="Corruption") as err:
            if call == "scan":
                kv.scan(b"", None, 10**9)
            elif call == "scan-bounded":
                kv.scan(b"k000000", b"k999999", 10**9)
            elif call == "count":
                kv.count()
            else:
                list(kv.items())
        assert str(sst) in str(err.value)
    finally:
        db.close()


# --- item 4: SQLite ----------------------------------------------------------------------------


def cut(path: Path, keep: float) -> None:
    path.write_bytes(path.read_bytes()[: int(path.stat().st_size * keep)])


def drop_index(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("DROP INDEX idx_profiles_created_at")
    conn.commit()
    conn.close()


def drop_table(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE profiles")
    conn.commit()
    conn.close()


SQLITE_DAMAGE = {
    "empty": lambda p: p.write_bytes(b""),
    "truncated": lambda p: cut(p, 0.5),
    "dropped-index": drop_index,
    "dropped-table": drop_table,
}


@pytest.mark.parametrize("record", [True, False], ids=["recorded", "no-record"])
@pytest.mark.parametrize("damage", list(SQLITE_DAMAGE))
def test_sqlite_damaged_store_is_refused_and_no_schema_is_created(
    tmp_path: Path, damage: str, record: bool
) -> None:
    """An empty or truncated store.db, or a dropped table or index, was opened and given
    an empty schema (CREATE ... IF NOT EXISTS). With the record of the clean close the
    size or CRC32 differs; without it (after a crash) the schema check and quick_check
    refuse, and the file is opened read-write only (never created)."""
    d = tmp_path / "sqlite"
    build("sqlite", d)
    db = d / "store.db"
    SQLITE_DAMAGE[damage](db)
    if not record:
        forget_record(d)
    before = files(d)
    err = refusal("sqlite", d)
    assert isinstance(err, StoreDirError), repr(err)
    assert str(db) in str(err)
    assert files(d) == before  # no schema created, nothing written


def test_sqlite_single_byte_flips_are_refused_or_change_nothing(tmp_path: Path) -> None:
    """12 of 31 flips changed returned values with exit 0: SQLite pages carry no
    checksum, so the clean close records a CRC32 of the whole database file."""
    d = tmp_path / "sqlite"
    build("sqlite", d)
    reference = read_back("sqlite", d)
    pristine = tmp_path / "pristine"
    shutil.copytree(d, pristine, copy_function=shutil.copy2)
    size = (d / "store.db").stat().st_size
    outcomes = {"refused": 0, "same": 0}
    for i in range(31):
        shutil.rmtree(d)
        shutil.copytree(pristine, d)
        # copies keep size and contents; the marker's record names sizes and CRCs only
        db = d / "store.db"
        data = bytearray(db.read_bytes())
        data[(i * 7919 * 64 + 100) % size] ^= 0x5A
        db.write_bytes(bytes(data))
        try:
            got = read_back("sqlite", d)
        except BaseException as exc:  # noqa: BLE001
            while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
                exc = exc.exceptions[0]
            assert isinstance(exc, StoreDirError) and str(db) in str(exc), repr(exc)
            outcomes["refused"] += 1
        else:
            assert got == reference
            outcomes["same"] += 1
    print(outcomes)
    assert outcomes["refused"] >= 1


def test_sqlite_reopen_of_an_intact_store_reads_everything(tmp_path: Path) -> None:
    d = tmp_path / "sqlite"
    build("sqlite", d)
    count, profiles, ids = read_back("sqlite", d)
    assert count == N and [decode(p)[0] if isinstance(p, bytes) else p[0] for p in profiles] == list(
        range(1, N + 1)
    )
    assert len(ids) == N
