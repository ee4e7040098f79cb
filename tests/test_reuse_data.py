"""``--reuse-data``: a store built once (``--keep-data``) is reopened from the command line
without reset, after its fingerprint and its integrity were checked, and the phases that
read it reproduce the build's checksums (issue 23, first paragraph and items 2, 4, 5)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT, run_asyncbench

from asyncbench.engines.store_dir import MARKER

QUICK = str(ROOT / "benchmarks" / "quick.toml")
ENGINES = ("lsm", "rocksdb", "sqlite")
FAST = ("--profiles", "1k", "--no-isolate")


def store(tmp_path: Path, engine: str) -> Path:
    return tmp_path / "data" / "profiles-1000" / engine


def snapshot(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def build(run_cli, *engines: str, extra: tuple[str, ...] = ()) -> dict:
    """A real build (``--keep-data``) of ``engines`` into the test's data directory."""
    code, runs, output = run_cli(QUICK, "--engine", ",".join(engines), *FAST, "--keep-data", *extra)
    assert code == 0, output
    return runs[-1]


class BuiltStores:
    """The stores of one real build of every engine of :data:`ENGINES` per seed flag, made
    once per module and copied into each test that damages, edits or reuses one: the
    stores are the same bytes a build of the test's own would write (a store does not
    depend on its path), at a CLI run (report included) per seed instead of
    one per test."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._built: dict[tuple[str, ...], tuple[Path, dict]] = {}

    def _build(self, extra: tuple[str, ...]) -> tuple[Path, dict]:
        if extra not in self._built:
            where = self.root / f"build{len(self._built)}"
            proc = run_asyncbench(where, QUICK, "--engine", ",".join(ENGINES), *FAST, "--keep-data", *extra)
            assert proc.returncode == 0, proc.stdout + proc.stderr
            (result,) = (where / "out").glob("profiles-1000-p1/asyncbench-*.json")
            self._built[extra] = where, json.loads(result.read_text())
        return self._built[extra]

    def copy(self, tmp_path: Path, *engines: str, extra: tuple[str, ...] = ()) -> dict:
        """``engines``' stores into ``tmp_path``'s data directory, as :func:`build` leaves
        them; the build's result with those engines."""
        where, doc = self._build(extra)
        for name in engines:
            shutil.copytree(store(where, name), store(tmp_path, name))
        return {**doc, "engines": [e for e in doc["engines"] if e["engine"] in engines]}


@pytest.fixture(scope="module")
def built_stores(tmp_path_factory: pytest.TempPathFactory) -> BuiltStores:
    return BuiltStores(tmp_path_factory.mktemp("built"))


def test_reuse_runs_the_read_phases_on_the_kept_store_and_reproduces_the_checksums(run_cli, tmp_path: Path, built_stores: BuiltStores) -> None:
    built_result = built_stores.copy(tmp_path, *ENGINES)
    for name in ENGINES:
        fp = json.loads((store(tmp_path, name) / MARKER).read_text())["fingerprint"]
        assert (fp["engine"], fp["profiles"], fp["seed"]) == (name, 1000, 570123434)
    # isolated (the default): the child gets the flag through the config it is handed
    code, runs, output = run_cli(QUICK, "--engine", ",".join(ENGINES), "--profiles", "1k", "--reuse-data")
    assert code == 0, output
    reused = runs[-1]
    assert "(reused store)" in output
    for before, after in zip(built_result["engines"], reused["engines"], strict=True):
        assert after["status"] == "ok", after
        ran = [p for p in after["phases"] if not p["skipped"]]
        skipped = {p["name"] for p in after["phases"] if p["skipped"]}
        assert {"insert profiles", "update profiles", "read by user id"} <= skipped
        # the store holds the updated profiles: the post-update phases and verify run ...
        assert {p["name"] for p in ran if p["checksum"]} == {
            p["name"] for p in before["phases"] if p["checksum"] and p["post_update"]
        }
        # ... and reproduce the build's checksums
        want = {p["index"]: p["checksum"] for p in before["phases"]}
        assert all(p["checksum"] == want[p["index"]] for p in ran if p["checksum"]), after["engine"]
        assert any("reused store: skipped" in n for n in after["notes"])
        assert store(tmp_path, after["engine"]).exists()  # a reused store is kept


def test_reuse_of_a_store_from_another_seed_is_refused_by_the_fingerprint(run_cli, tmp_path: Path, built_stores: BuiltStores) -> None:
    built_stores.copy(tmp_path, "lsm", "sqlite")
    before = {e: snapshot(store(tmp_path, e)) for e in ("lsm", "sqlite")}
    code, runs, output = run_cli(QUICK, "--engine", "lsm,sqlite", *FAST, "--reuse-data", "--seed", "5")
    assert code == 1, output
    for e in runs[-1]["engines"]:
        assert e["status"] == "failed" and e["phase"] == "open"
        assert "StoreMismatch" in e["detail"] and "seed 570123434 (this run: 5)" in e["detail"]
        assert str(store(tmp_path, e["engine"])) in e["detail"]
    assert {e: snapshot(store(tmp_path, e)) for e in ("lsm", "sqlite")} == before  # untouched


def test_reuse_of_another_engines_store_is_refused(run_cli, tmp_path: Path, built_stores: BuiltStores) -> None:
    built_stores.copy(tmp_path, "lsm", "rocksdb")
    shutil.rmtree(store(tmp_path, "rocksdb"))
    shutil.copytree(store(tmp_path, "lsm"), store(tmp_path, "rocksdb"))  # the lsm store, substituted
    code, runs, output = run_cli(QUICK, "--engine", "rocksdb", *FAST, "--reuse-data")
    assert code == 1, output
    (e,) = runs[-1]["engines"]
    assert e["phase"] == "open" and "holds a store of engine 'lsm', not 'rocksdb'" in e["detail"]


def test_reuse_without_a_built_store_is_refused_and_creates_nothing(run_cli, tmp_path: Path) -> None:
    """Issue 34: refused before the run (exit 2), no report, no directory, no lock."""
    code, runs, output = run_cli(QUICK, "--engine", "sqlite", *FAST, "--reuse-data")
    assert code == 2, output
    assert f"command line: --reuse-data: there is no sqlite store to reuse at {store(tmp_path, 'sqlite')}" in output
    assert runs == [] and not (tmp_path / "data").exists() and not (tmp_path / "out").exists()


def test_reuse_of_an_engine_without_a_store_is_refused_before_the_run(run_cli, tmp_path: Path) -> None:
    """Issue 34: memory keeps no store, so nothing can be reused: exit 2, nothing created."""
    code, runs, output = run_cli(QUICK, "--engine", "memory", *FAST, "--reuse-data")
    assert code == 2, output
    assert "command line: --reuse-data: engine 'memory' keeps no store to reuse" in output
    assert runs == [] and not (tmp_path / "data").exists() and not (tmp_path / "out").exists()


def test_a_store_from_a_failed_or_cleaned_run_has_no_fingerprint(run_cli, tmp_path: Path) -> None:
    """Only a run that finished every phase and kept its store fingerprints it."""
    code, _, output = run_cli(QUICK, "--engine", "lsm", *FAST, "--keep-data", "--timeout-seconds", "0.05")
    assert code != 0, output
    code, runs, output = run_cli(QUICK, "--engine", "lsm", *FAST, "--reuse-data")
    assert code == 1 and "has no fingerprint" in runs[-1]["engines"][0]["detail"], output


def test_rocksdb_manifest_cut_in_half_is_refused_through_the_cli(run_cli, tmp_path: Path, built_stores: BuiltStores) -> None:
    """Item 2 as reported: the run exited 0 with an empty index (no .sst left)."""
    built_stores.copy(tmp_path, "rocksdb")
    (manifest,) = (store(tmp_path, "rocksdb") / "email-index").glob("MANIFEST-*")
    manifest.write_bytes(manifest.read_bytes()[: manifest.stat().st_size // 2])
    before = snapshot(store(tmp_path, "rocksdb"))
    code, runs, output = run_cli(QUICK, "--engine", "rocksdb", *FAST, "--reuse-data")
    assert code == 1, output
    (e,) = runs[-1]["engines"]
    assert e["phase"] == "open" and str(manifest) in e["detail"]
    after = snapshot(store(tmp_path, "rocksdb"))
    assert {k: v for k, v in after.items() if k != MARKER} == {k: v for k, v in before.items() if k != MARKER}


def test_sqlite_empty_database_is_refused_through_the_cli(run_cli, tmp_path: Path, built_stores: BuiltStores) -> None:
    built_stores.copy(tmp_path, "sqlite")
    db = store(tmp_path, "sqlite") / "store.db"
    db.write_bytes(b"")
    code, runs, output = run_cli(QUICK, "--engine", "sqlite", *FAST, "--reuse-data")
    assert code == 1, output
    (e,) = runs[-1]["engines"]
    assert e["phase"] == "open" and str(db) in e["detail"]
    assert db.stat().st_size == 0  # no schema was created in it


def test_reuse_contradicts_clean_data(run_cli) -> None:
    code, _, output = run_cli(QUICK, "--reuse-data", "--clean-data")
    assert code == 2 and "--clean-data: contradicts reusing the stores" in output


def test_reuse_is_refused_for_a_distributed_run(run_cli) -> None:
    code, _, output = run_cli(QUICK, "--reuse-data", "--processes", "2", "--engine", "sqlite")
    assert code == 2 and "--reuse-data: a distributed run's engines" in output


# --- issue 34: a reuse run proves its data, not only its files -----------------------------


def rerecord(directory: Path, engine: str) -> None:
    """What a person repairing a store does after changing it: recompute the marker's
    record of the files (and keep its fingerprint), so every file check passes."""
    from asyncbench.engines import engine_class
    from asyncbench.engines.store_dir import StoreDir

    StoreDir(directory, engine_class(engine).store_layout).record_files()


def edit_fingerprint(directory: Path, **fields: object) -> None:
    marker = directory / MARKER
    doc = json.loads(marker.read_text())
    doc["fingerprint"].update(fields)
    marker.write_text(json.dumps(doc))


def test_a_store_of_another_seed_with_its_fingerprint_seed_edited_is_refused(run_cli, tmp_path: Path, built_stores: BuiltStores) -> None:
    """Issue 34: a seed-5 store whose marker says seed 570123434 was reused, exit 0, with
    wrong checksums; the fingerprint's own verify checksum contradicts the plan."""
    built_stores.copy(tmp_path, "lsm", "sqlite", extra=("--seed", "5"))
    for e in ("lsm", "sqlite"):
        edit_fingerprint(store(tmp_path, e), seed=570123434)
    code, runs, output = run_cli(QUICK, "--engine", "lsm,sqlite", *FAST, "--reuse-data")
    assert code == 1, output
    for e in runs[-1]["engines"]:
        assert e["status"] == "failed" and e["phase"] == "open", e
        assert "StoreMismatch" in e["detail"] and "verify checksum" in e["detail"], e["detail"]
        assert str(store(tmp_path, e["engine"])) in e["detail"]


def test_a_forged_fingerprint_without_a_recorded_verify_is_refused_at_open(run_cli, tmp_path: Path, built_stores: BuiltStores) -> None:
    """The same forgery with the recorded verify result removed too: a fingerprint without
    its verify checksum proves nothing and is refused before any phase reads (issue 52:
    it used to fail only at the first phase that differed, after reading)."""
    built_stores.copy(tmp_path, "sqlite", extra=("--seed", "5"))
    doc = json.loads((store(tmp_path, "sqlite") / MARKER).read_text())
    kept = [c for c in doc["fingerprint"]["checksums"] if c["kind"] != "verify"]
    edit_fingerprint(store(tmp_path, "sqlite"), seed=570123434, checksums=kept)
    code, runs, output = run_cli(QUICK, "--engine", "sqlite", *FAST, "--reuse-data")
    assert code == 1, output
    (e,) = runs[-1]["engines"]
    assert e["status"] == "failed" and e["phase"] == "open", e
    assert "StoreMismatch" in e["detail"] and "carries no verify checksum" in e["detail"], e["detail"]


def test_a_changed_sqlite_row_with_the_record_recomputed_fails_naming_the_phase(run_cli, tmp_path: Path, built_stores: BuiltStores) -> None:
    """Issue 34: a row updated with sqlite3 and the marker's record recomputed passed every
    file check and gave wrong checksums with exit 0."""
    import sqlite3

    built_stores.copy(tmp_path, "sqlite")
    db = store(tmp_path, "sqlite") / "store.db"
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE profiles SET reputation = reputation + 1 WHERE user_id = 1")
    conn.close()
    rerecord(store(tmp_path, "sqlite"), "sqlite")
    code, runs, output = run_cli(QUICK, "--engine", "sqlite", *FAST, "--reuse-data")
    assert code == 1, output
    (e,) = runs[-1]["engines"]
    assert e["status"] == "failed" and "StoreContentMismatch" in e["detail"], e
    assert f"phase {e['phase']!r}" in e["detail"] and str(store(tmp_path, "sqlite")) in e["detail"]


def test_deleted_sqlite_rows_with_the_record_recomputed_fail_at_verify_without_a_recorded_result(
    run_cli, tmp_path: Path, built_stores: BuiltStores
) -> None:
    """Rows deleted and the record recomputed, on a store whose build recorded no phase
    result but verify's (which every fingerprint carries): verify's checksum comes from
    the plan alone."""
    import sqlite3

    built_stores.copy(tmp_path, "sqlite")
    db = store(tmp_path, "sqlite") / "store.db"
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM profiles WHERE user_id > 990")
    conn.close()
    rerecord(store(tmp_path, "sqlite"), "sqlite")
    doc = json.loads((store(tmp_path, "sqlite") / MARKER).read_text())
    only_verify = [c for c in doc["fingerprint"]["checksums"] if c["kind"] == "verify"]
    edit_fingerprint(store(tmp_path, "sqlite"), checksums=only_verify)
    code, runs, output = run_cli(QUICK, "--engine", "sqlite", *FAST, "--reuse-data")
    assert code == 1, output
    (e,) = runs[-1]["engines"]
    assert e["status"] == "failed" and e["phase"] == "final (verify)", e
    assert "computed from the plan" in e["detail"]
    assert any("not proven against its build" in n for n in e["notes"])


def test_reuse_at_another_worker_count_says_which_phases_it_could_not_prove(run_cli, tmp_path: Path, built_stores: BuiltStores) -> None:
    built_stores.copy(tmp_path, "lsm")
    code, runs, output = run_cli(QUICK, "--engine", "lsm", *FAST, "--reuse-data", "--parallelism", "2")
    assert code == 0, output
    (e,) = runs[-1]["engines"]
    (note,) = [n for n in e["notes"] if "not proven against its build" in n]
    assert "post-update read by user id (the build ran it with 1 worker(s), this run 2)" in note
    assert "final (verify)" not in note  # verify is proven by the plan at any worker count


def _wal_left_beside(db: Path, statement: str, checkpoint: bool) -> None:
    """Leave beside ``db`` the -wal and -shm a connection had after ``statement`` (and a
    passive checkpoint if asked), with the database file itself as it was before."""
    import sqlite3

    original = db.read_bytes()
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_autocheckpoint=0")
    with conn:
        conn.execute(statement)
    if checkpoint:
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
    wal, shm = (db.with_name(db.name + s) for s in ("-wal", "-shm"))
    kept = wal.read_bytes(), shm.read_bytes()
    conn.close()  # the last connection: checkpoints and deletes both
    db.write_bytes(original)
    wal.write_bytes(kept[0])
    shm.write_bytes(kept[1])


def test_a_kept_sqlite_store_opened_read_only_is_reused(run_cli, tmp_path: Path, built_stores: BuiltStores) -> None:
    """Issue 34: a read-only sqlite3 leaves an empty -wal and a -shm beside a clean store,
    which were refused as damage until deleted by hand; they hold nothing to apply."""
    import sqlite3

    built_result = built_stores.copy(tmp_path, "sqlite")
    db = store(tmp_path, "sqlite") / "store.db"
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    assert conn.execute("SELECT count(*) FROM profiles").fetchone() == (1000,)
    conn.close()
    assert {p.name for p in db.parent.iterdir()} >= {"store.db-wal", "store.db-shm"}
    code, runs, output = run_cli(QUICK, "--engine", "sqlite", *FAST, "--reuse-data")
    assert code == 0, output
    want = {p["index"]: p["checksum"] for p in built_result["engines"][0]["phases"]}
    ran = [p for p in runs[-1]["engines"][0]["phases"] if p["checksum"] and not p["skipped"]]
    assert ran and all(p["checksum"] == want[p["index"]] for p in ran)


def test_a_checkpointed_sqlite_wal_is_reused_and_one_that_changes_the_store_is_refused(
    run_cli, tmp_path: Path, built_stores: BuiltStores
) -> None:
    built_stores.copy(tmp_path, "sqlite")
    db = store(tmp_path, "sqlite") / "store.db"
    # a write that changed nothing, checkpointed but not truncated: every frame is in the file
    _wal_left_beside(db, "UPDATE profiles SET reputation = reputation WHERE user_id = 1", checkpoint=True)
    code, _, output = run_cli(QUICK, "--engine", "sqlite", *FAST, "--reuse-data")
    assert code == 0, output
    # a committed change still in the WAL: opening would apply it to the store
    _wal_left_beside(db, "UPDATE profiles SET reputation = reputation + 1 WHERE user_id = 1", checkpoint=False)
    code, runs, output = run_cli(QUICK, "--engine", "sqlite", *FAST, "--reuse-data")
    assert code == 1, output
    (e,) = runs[-1]["engines"]
    assert e["phase"] == "open" and "StoreDamaged" in e["detail"] and f"{db}-wal" in e["detail"], e["detail"]


def test_a_damaged_rocksdb_database_is_labelled_damaged_naming_it(run_cli, tmp_path: Path, built_stores: BuiltStores) -> None:
    """Issue 34: a RocksDB manifest that RocksDB itself refuses (here: flipped, and the
    record recomputed so the library is what meets it) was reported as StoreMissing."""
    built_stores.copy(tmp_path, "rocksdb")
    (manifest,) = (store(tmp_path, "rocksdb") / "email-index").glob("MANIFEST-*")
    raw = bytearray(manifest.read_bytes())
    raw[len(raw) // 2] ^= 0x40
    manifest.write_bytes(bytes(raw))
    rerecord(store(tmp_path, "rocksdb"), "rocksdb")
    code, runs, output = run_cli(QUICK, "--engine", "rocksdb", *FAST, "--reuse-data")
    assert code == 1, output
    (e,) = runs[-1]["engines"]
    assert e["phase"] == "open" and e["detail"].startswith("StoreDamaged: "), e["detail"]
    assert str(manifest.parent) in e["detail"] and "\n" not in e["detail"]


def test_a_rocksdb_block_checksum_error_names_the_store(run_cli, tmp_path: Path, built_stores: BuiltStores) -> None:
    """Issue 34: a corrupt data block read by a phase was reported as a bare ``Exception:
    Corruption: block checksum mismatch: stored(context removed) = ...``."""
    built_stores.copy(tmp_path, "rocksdb")
    (table,) = sorted((store(tmp_path, "rocksdb") / "profiles").glob("*.sst"))[:1]
    raw = bytearray(table.read_bytes())
    raw[0] ^= 0x40  # the first data block: every post-update read reaches it
    table.write_bytes(bytes(raw))
    rerecord(store(tmp_path, "rocksdb"), "rocksdb")
    code, runs, output = run_cli(QUICK, "--engine", "rocksdb", *FAST, "--reuse-data")
    assert code == 1, output
    (e,) = runs[-1]["engines"]
    assert e["detail"].startswith(f"StoreDamaged: {store(tmp_path, 'rocksdb')}: RocksDB cannot read the store: "), e
    assert "Corruption" in e["detail"] and str(table) in e["detail"]


def _as_user_nobody() -> list[str] | None:
    """A command that runs this asyncbench as the unprivileged user ``nobody`` (this
    interpreter, or the system's of the same version when this one is not reachable by
    nobody, with this environment's packages), or None when that cannot be done here."""
    import os
    import pwd
    import subprocess
    import sys
    import sysconfig

    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        return None
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        return None
    dirs = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    boot = f"import site, sys, runpy; [site.addsitedir(d) for d in {dirs!r}]; "
    become = [setpriv, f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups"]
    v = sys.version_info
    for python in (sys.executable, f"/usr/bin/python{v.major}.{v.minor}"):
        probe = subprocess.run(
            [*become, python, "-c", boot + "import asyncbench.cli.main"], capture_output=True, timeout=60
        )
        if probe.returncode == 0:
            run = "sys.argv[0] = 'asyncbench'; runpy.run_module('asyncbench', run_name='__main__', alter_sys=True)"
            return [*become, python, "-c", boot + run]
    return None


def test_a_read_only_sqlite_store_is_reused_by_an_unprivileged_user_again_and_again() -> None:
    """Issue 34: a store made read-only and reused by a user who may not write it was exact
    once, then failed at settle ("attempt to write a readonly database") on the -wal/-shm
    the first run left. Such a database is opened read-only and settle has nothing to do."""
    import os
    import pwd
    import subprocess
    import tempfile

    command = _as_user_nobody()
    if command is None:
        pytest.skip("needs root, setpriv and a Python that the user nobody can run with these packages")
    root = Path(tempfile.mkdtemp(prefix="asyncbench-nobody-"))
    try:
        nobody = pwd.getpwnam("nobody")
        os.chown(root, nobody.pw_uid, nobody.pw_gid)
        args = [QUICK, "--engine", "sqlite", *FAST, "--output", str(root / "out"), "--data", str(root / "data")]

        def run(*extra: str) -> dict:
            done = subprocess.run([*command, *args, *extra], capture_output=True, text=True, timeout=300, env={
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(root)})
            assert done.returncode == 0, done.stdout + done.stderr
            (latest,) = sorted((root / "out").glob("profiles-*/asyncbench-*.json"), key=os.path.getmtime)[-1:]
            return json.loads(latest.read_text())

        built = run("--keep-data")
        db = root / "data" / "profiles-1000" / "sqlite" / "store.db"
        db.chmod(0o444)
        want = {p["index"]: p["checksum"] for p in built["engines"][0]["phases"]}
        for _ in range(2):
            (e,) = run("--reuse-data")["engines"]
            assert e["status"] == "ok", e
            ran = [p for p in e["phases"] if p["checksum"] and not p["skipped"]]
            assert ran and all(p["checksum"] == want[p["index"]] for p in ran)
        assert db.stat().st_mode & 0o777 == 0o444  # left as the user made it
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_a_kept_sqlite_store_opened_read_only_is_reset_by_the_next_build(run_cli, tmp_path: Path, built_stores: BuiltStores) -> None:
    """The same -wal/-shm left by a read-only reader made the next build's reset refuse the
    directory ("holds entries asyncbench did not write"); they are the library's idle
    state of the engine's own database, deleted with it. A WAL that holds a change is not."""
    import sqlite3

    built_stores.copy(tmp_path, "sqlite")
    db = store(tmp_path, "sqlite") / "store.db"
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    conn.execute("SELECT count(*) FROM profiles").fetchone()
    conn.close()
    build(run_cli, "sqlite")  # asserts exit 0
    _wal_left_beside(db, "UPDATE profiles SET reputation = reputation + 1 WHERE user_id = 1", checkpoint=False)
    code, runs, output = run_cli(QUICK, "--engine", "sqlite", *FAST, "--keep-data")
    assert code == 1 and "holds entries asyncbench did not write" in output, output
    assert (db.parent / "store.db-wal").exists()


def test_a_build_without_a_verify_phase_carries_the_plans_verify_and_a_stripped_fingerprint_is_refused(
    run_cli, tmp_path: Path
) -> None:
    """Issue 52 item 1: every reusable store's fingerprint carries a verify checksum (the
    plan's, when the build ran no verify phase), and one without its ``checksums`` list is
    refused at open, naming the store and the key, with the store untouched."""
    text = (ROOT / "benchmarks" / "quick.toml").read_text()
    plan = tmp_path / "no-verify.toml"
    plan.write_text(text[: text.rindex("[[phase]]")])  # quick.toml ends with its verify phase
    code, _, output = run_cli(str(plan), "--engine", "sqlite", *FAST, "--keep-data")
    assert code == 0, output
    marker = store(tmp_path, "sqlite") / MARKER
    doc = json.loads(marker.read_text())
    assert [e["kind"] for e in doc["fingerprint"]["checksums"]].count("verify") == 1
    code, _, output = run_cli(str(plan), "--engine", "sqlite", *FAST, "--reuse-data")
    assert code == 0, output
    del doc["fingerprint"]["checksums"]
    marker.write_text(json.dumps(doc))
    before = snapshot(store(tmp_path, "sqlite"))
    code, runs, output = run_cli(str(plan), "--engine", "sqlite", *FAST, "--reuse-data")
    assert code == 1, output
    (e,) = runs[-1]["engines"]
    assert e["status"] == "failed" and e["phase"] == "open", e
    assert "StoreMismatch" in e["detail"] and "'checksums'" in e["detail"], e["detail"]
    assert str(store(tmp_path, "sqlite")) in e["detail"]
    assert snapshot(store(tmp_path, "sqlite")) == before
