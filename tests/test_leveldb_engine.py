"""The LevelDB engine (``engines/leveldb.py``, through plyvel): checksums equal to the memory
engine's on the profile store's quick plan, on YCSB A and E at P1 and P4 and on the counter example, through the real
CLI; its directory refused when foreign or damaged; reopen keeps the data; settings
validated (exit 2 naming the key) and shown configured beside what plyvel passes."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import ROOT, store_of

plyvel = pytest.importorskip("plyvel")

from asyncbench.cli.main import main  # noqa: E402
from asyncbench.engine import EngineConfig, opened  # noqa: E402
from asyncbench.engines import all_engines  # noqa: E402
from asyncbench.engines.leveldb import LevelDbEngine, LevelKv  # noqa: E402
from asyncbench.engines.store_dir import MARKER, StoreDamaged, StoreDirError  # noqa: E402
from asyncbench.workloads.profile_store.generate import create_many  # noqa: E402
from asyncbench.workloads.profile_store.kv_store import STORE_NAMES as PROFILE_STORES  # noqa: E402

SEED = 570123434
N = 400


def make(path: Path, **settings: Any) -> LevelDbEngine:
    return LevelDbEngine(EngineConfig("leveldb", path, settings, limit=7, seed=SEED, stores=PROFILE_STORES))


def checksums(results: list[dict]) -> dict[tuple[str, int, str], str]:
    """(engine, P, phase) -> checksum over every run of the results; every engine ran ok."""
    out: dict[tuple[str, int, str], str] = {}
    for run in results:
        for engine in run["engines"]:
            assert engine["status"] == "ok", engine.get("detail")
            for phase in engine["phases"]:
                if phase["checksum"]:
                    out[(engine["engine"], run["parallelism"], phase["name"])] = phase["checksum"]
    return out


def agree_with_memory(sums: dict[tuple[str, int, str], str]) -> int:
    """Every leveldb checksum equals memory's of the same P and phase; how many compared."""
    ours = {(p, name): c for (e, p, name), c in sums.items() if e == "leveldb"}
    memory = {(p, name): c for (e, p, name), c in sums.items() if e == "memory"}
    assert ours == memory
    return len(ours)


# --- through the CLI ---------------------------------------------------------------------


def test_quick_plan_checksums_equal_memorys(tmp_path: Path, run_cli) -> None:
    code, results, output = run_cli(
        str(ROOT / "benchmarks" / "quick.toml"), "--engine", "memory,leveldb", "--no-isolate", "--yes"
    )
    assert code == 0, output
    assert agree_with_memory(checksums(results)) == 17


@pytest.mark.parametrize("letter", "ae")
def test_ycsb_checksums_equal_memorys_at_p1_and_p4(letter: str, tmp_path: Path, run_cli) -> None:
    from test_ycsb_run import small_plan

    plan, _ = small_plan(tmp_path, letter)
    code, results, output = run_cli(
        str(plan), "--engine", "memory,leveldb", "--parallelism", "1,4", "--no-isolate", "--yes"
    )
    assert code == 0, output
    sums = checksums(results)
    assert {(e, p) for e, p, _ in sums} == {(e, p) for e in ("memory", "leveldb") for p in (1, 4)}
    assert agree_with_memory(sums) == 4  # load and mixed, at each P


def test_the_counter_example_checksums_equal_memorys(tmp_path: Path) -> None:
    """A third workload's one store ("counters"), opened by the name it declares."""
    import orjson
    from test_counter_workload import EXAMPLES, _cli

    proc = _cli(tmp_path, str(EXAMPLES / "counter.toml"), "--profiles", "1000", "--engine", "memory,leveldb", "--yes")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = [orjson.loads(p.read_bytes()) for p in sorted((tmp_path / "out").glob("counters-*/asyncbench-*.json"))]
    assert agree_with_memory(checksums(results)) == 3  # load, increment, verify


@pytest.mark.parametrize(
    ("table", "key"),
    [
        ("write_buffer_size_mb = 0", "engines.leveldb.write_buffer_size_mb"),
        ("write_buffer_size_mb = 2048", "engines.leveldb.write_buffer_size_mb"),  # LevelDB would clip it to 1 GiB
        ("bloom_filter_bits = 65", "engines.leveldb.bloom_filter_bits"),
        ("block_size = 512", "engines.leveldb.block_size"),
        ("max_open_files = 10", "engines.leveldb.max_open_files"),
        ('compression = "zstd"', "engines.leveldb.compression"),
        ("block_cache_size_mb = 0", "engines.leveldb.block_cache_size_mb"),
    ],
)
def test_a_bad_setting_exits_2_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str], table: str, key: str) -> None:
    plan = tmp_path / "p.toml"
    plan.write_text(
        '[run]\nprofiles = 100\n[[phase]]\nkind = "insert"\n[[phase]]\nkind = "verify"\n'
        f"[engines.leveldb]\n{table}\n"
    )
    out, data = tmp_path / "out", tmp_path / "data"
    code = main([str(plan), "--engine", "leveldb", "--output", str(out), "--data", str(data)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"{plan}: {key}:" in err
    assert not out.exists() and not data.exists()


def test_listed_by_engines_but_not_run_by_all(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["engines"]) == 0
    assert "leveldb" in capsys.readouterr().out
    assert "leveldb" not in all_engines()


# --- the engine itself ---------------------------------------------------------------------


def test_reopen_keeps_the_data(tmp_path: Path) -> None:
    async def main_() -> None:
        async with opened(make(tmp_path), reset=True) as e:
            await store_of(e).insert(create_many(1, N, SEED), [])
            expected = await store_of(e).read_by_id([1, N // 2, N], [])
            top = await store_of(e).scan_top_reputation(1, [])
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*PROFILE_STORES, MARKER, "CLEAN_SHUTDOWN"])
        async with opened(make(tmp_path), reset=False) as again:
            assert not again.worker(0).unclean
            assert await store_of(again).count() == N
            assert await store_of(again).read_by_id([1, N // 2, N], []) == expected
            assert await store_of(again).scan_top_reputation(1, []) == top
        async with opened(make(tmp_path), reset=True) as wiped:
            assert await store_of(wiped).count() == 0

    anyio.run(main_)


def test_a_foreign_leveldb_database_or_file_is_refused_and_left_alone(tmp_path: Path) -> None:
    """A LevelDB database asyncbench did not make (no marker) is neither reset nor opened;
    a user's file beside our store stops a reset, which deletes nothing."""
    foreign = plyvel.DB(str(tmp_path / "profiles"), create_if_missing=True)
    foreign.put(b"theirs", b"1")
    foreign.close()
    before = sorted(p.name for p in (tmp_path / "profiles").iterdir())
    for reset in (True, False):
        with pytest.raises(StoreDirError, match="marker"):
            anyio.run(make(tmp_path).open, reset)
    assert sorted(p.name for p in (tmp_path / "profiles").iterdir()) == before
    db = plyvel.DB(str(tmp_path / "profiles"))
    assert db.get(b"theirs") == b"1"
    db.close()

    ours = tmp_path / "ours"
    anyio.run(_build, ours)
    (ours / "notes.txt").write_text("the user's")
    with pytest.raises(StoreDirError, match="notes.txt"):
        anyio.run(make(ours).open, True)
    assert (ours / "notes.txt").read_text() == "the user's" and all((ours / n).is_dir() for n in PROFILE_STORES)


async def _build(path: Path, n: int = N) -> None:
    async with opened(make(path), reset=True) as e:
        await store_of(e).insert(create_many(1, n, SEED), [])
        await e.stabilize()


def test_a_damaged_store_is_refused_naming_the_file(tmp_path: Path) -> None:
    """After a clean close the marker's record catches a changed file before LevelDB opens it."""
    anyio.run(_build, tmp_path)
    (manifest,) = (tmp_path / "email-index").glob("MANIFEST-*")
    manifest.write_bytes(manifest.read_bytes()[: manifest.stat().st_size // 2])
    with pytest.raises(StoreDamaged, match="bytes, was") as err:
        anyio.run(make(tmp_path).open, False)
    assert str(manifest) in str(err.value)


def _close_uncleanly(engine: LevelDbEngine) -> None:
    """The databases released as a killed process leaves them: no clean-shutdown mark, no
    record of the files (the marker still says "in use")."""
    for db in engine._dbs:
        db.close()
    engine._dbs = []


def test_leveldbs_own_refusal_after_an_unclean_close_names_the_store(tmp_path: Path) -> None:
    """After a crash the record is stale, so LevelDB's own open decides: its error is a
    StoreDamaged naming the database, not a new empty one."""

    async def main_() -> None:
        e = make(tmp_path)
        await e.open(reset=True)
        await store_of(e).insert(create_many(1, N, SEED), [])
        _close_uncleanly(e)

    anyio.run(main_)
    (current,) = (tmp_path / "created-at-index").glob("MANIFEST-*")
    current.write_bytes(b"\x00garbage" * 64)
    with pytest.raises(StoreDamaged, match="LevelDB cannot open the database .created-at-index.: Corruption:"):
        anyio.run(make(tmp_path).open, False)


def test_an_unclean_close_is_said_and_the_workload_repairs(tmp_path: Path) -> None:
    async def main_() -> None:
        e = make(tmp_path)
        await e.open(reset=True)
        await store_of(e).insert(create_many(1, N, SEED), [])
        # a profile's index entry written, the profile not (a crash between the five puts)
        e.worker(0).store("email-index").put(b"half@example.com", b"%020d" % (N + 1))
        _close_uncleanly(e)
        async with opened(make(tmp_path), reset=False) as again:
            primitives = again.worker(0)
            assert primitives.unclean
            assert await store_of(again).count() == N  # the repair ran before the first batch
            assert primitives.store("email-index").get(b"half@example.com") is None
            assert primitives.repaired is not None

    anyio.run(main_)


def _last_data_block_byte(ldb: Path) -> int:
    """An offset inside the last data block of a table written without a filter: data blocks
    end where the metaindex block begins (the footer's first handle)."""
    footer = ldb.read_bytes()[-48:]

    def varint(buf: bytes, at: int) -> tuple[int, int]:
        value = shift = 0
        while True:
            b = buf[at]
            value |= (b & 0x7F) << shift
            at += 1
            if not b & 0x80:
                return value, at
            shift += 7

    metaindex, _ = varint(footer, 0)
    assert struct.unpack("<Q", footer[-8:])[0] == 0xDB4775248B80FB57  # LevelDB's table magic
    return metaindex - 5 - 8  # before the block's 5-byte trailer, inside its last entry


@pytest.mark.parametrize("where", ["middle", "last-block"])
@pytest.mark.parametrize("call", ["scan", "scan-bounded", "count", "items"])
def test_every_iteration_raises_on_a_corrupt_block(tmp_path: Path, call: str, where: str) -> None:
    """plyvel's iterator checks LevelDB's status only while it is valid: a corrupt last block
    ended a scan short and silently; the raw iterator's check at the end raises."""
    db = plyvel.DB(str(tmp_path), create_if_missing=True, compression=None, block_size=1024)
    for i in range(3000):
        db.put(b"k%06d" % i, b"v" * 40)
    db.compact_range()
    db.close()
    (ldb,) = tmp_path.glob("*.ldb")
    data = bytearray(ldb.read_bytes())
    data[len(data) // 3 if where == "middle" else _last_data_block_byte(ldb)] ^= 0xFF
    ldb.write_bytes(bytes(data))
    db = plyvel.DB(str(tmp_path), paranoid_checks=True)
    kv = LevelKv(db)
    calls: dict[str, Callable[[], object]] = {
        "scan": lambda: kv.scan(b"", None, 10**9),
        "scan-bounded": lambda: kv.scan(b"k000000", b"k999999", 10**9),
        "count": kv.count,
        "items": lambda: list(kv.items()),
    }
    try:
        with pytest.raises(StoreDamaged, match=f"^{tmp_path}: LevelDB cannot read the database: Corruption: .*checksum"):
            calls[call]()
    finally:
        db.close()


def test_settings_are_shown_configured_and_as_plyvel_passes_them(tmp_path: Path) -> None:
    e = make(tmp_path, write_buffer_size_mb=16, bloom_filter_bits=0, compression="none", sync=True)
    rows = {s.name: s for s in e.facts().settings}
    assert rows["WriteBufferMb"].configured == "16"
    assert rows["WriteBufferMb"].effective == f"write_buffer_size={16 * 2**20}"
    assert rows["BloomFilterBits"].effective == "filter_policy=nullptr (no filter)"
    assert rows["Compression"].effective == "compression=kNoCompression"
    assert rows["WriteSync"].effective == "WriteOptions.sync=true"
    facts = e.facts()
    assert facts.durability.synced_commits and facts.durability.sync == "per write"
    default = make(tmp_path).facts()
    assert default.durability.sync.startswith("by the OS") and not default.durability.synced_commits
    assert {s.name: s for s in default.settings}["BloomFilterBits"].effective == "filter_policy=NewBloomFilterPolicy(10)"
    assert default.versions["LevelDB"].startswith(plyvel.__leveldb_version__)
    assert not tmp_path.joinpath("profiles").exists()  # facts open nothing

    async def main_() -> None:
        async with opened(make(tmp_path / "s", sync=True), reset=True) as synced:
            await store_of(synced).insert(create_many(1, 20, SEED), [])
            kv = synced.worker(0).store("profiles")
            assert isinstance(kv, LevelKv) and kv.put.keywords == {"sync": True}  # type: ignore[attr-defined]

    anyio.run(main_)


def test_writes_hop_to_a_thread_once_per_batch_and_reads_and_scans_stay_on_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The measured placement (engines/leveldb.py's docstring): a thread bought point reads
    and scans nothing; writes hop once per batch."""
    import asyncbench.engines.leveldb as module
    from asyncbench.workloads.profile_store.profiles import update

    hops: list[str] = []
    real = module.anyio.to_thread.run_sync

    async def counting(fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        hops.append(getattr(fn, "__name__", repr(fn)))
        return await real(fn, *args, **kw)

    monkeypatch.setattr(module.anyio.to_thread, "run_sync", counting)

    async def main_() -> None:
        async with opened(make(tmp_path), reset=True) as e:
            hops.clear()
            await store_of(e).insert(create_many(1, 20, SEED), [])
            await store_of(e).update([1, 2], lambda p: update(p, SEED), [])
            assert hops == ["_insert", "_update"]
            hops.clear()
            assert len(await store_of(e).read_by_id([1, 2, 3], [])) == 3
            await store_of(e).lookup_by_email([p[1] for p in create_many(1, 2, SEED)], [])
            await store_of(e).scan_top_reputation(1, [])
            await store_of(e).query_country_status([("US", "active")], [])
            assert await store_of(e).count() == 20
            assert hops == []

    anyio.run(main_)


def test_a_full_disk_is_an_oserror_with_enospc(tmp_path: Path) -> None:
    """plyvel raises ``IOError("IO error: ...: No space left on device")`` with no errno; the
    write placement gives it ``errno.ENOSPC``, so the run says the disk is full."""
    import errno

    from test_disk_full import _mount_tmpfs, _umount

    mnt = tmp_path / "mnt"
    mnt.mkdir()
    _mount_tmpfs(mnt, "512k")
    try:

        async def main_() -> None:
            e = make(mnt / "leveldb")
            await e.open(reset=True)
            try:
                with pytest.raises(OSError) as err:
                    for start in range(1, 20_001, 1000):
                        await store_of(e).insert(create_many(start, 1000, SEED), [])
                assert err.value.errno == errno.ENOSPC and "LevelDB" in str(err.value), err.value
            finally:
                _close_uncleanly(e)  # a close would only fail again on the full disk

        anyio.run(main_)
    finally:
        _umount(mnt)


def test_a_walk_over_a_corrupt_block_is_store_damage_naming_the_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record of a clean close sums only small files, so a large table is left to
    LevelDB's block checksums (here every file counts as large): a scan meeting a flipped
    byte fails as StoreDamaged naming the database (LevelDB's status names no file), with
    LevelDB's status text, not plyvel's ``b'...'``."""
    from asyncbench.engines import store_dir

    monkeypatch.setattr(store_dir, "SUMMED_BYTES", 0)
    anyio.run(_build, tmp_path, 3000)
    (ldb,) = (tmp_path / "profiles").glob("*.ldb")
    data = bytearray(ldb.read_bytes())
    data[len(data) // 3] ^= 0xFF
    ldb.write_bytes(bytes(data))

    async def main_() -> None:
        async with opened(make(tmp_path), reset=False) as e:
            await store_of(e).count()  # a walk of the profiles, in the scans placement

    with pytest.raises(BaseException) as caught:  # noqa: B017 - unwrapped below
        anyio.run(main_)
    err: BaseException = caught.value
    while isinstance(err, BaseExceptionGroup) and len(err.exceptions) == 1:
        err = err.exceptions[0]
    assert isinstance(err, StoreDamaged), repr(err)
    assert str(err) == f"{tmp_path / 'profiles'}: LevelDB cannot read the database: Corruption: block checksum mismatch"
