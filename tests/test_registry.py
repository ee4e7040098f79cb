"""Engine membership is stated by the engine classes and derived by the registry:
``--engine all``, the default set and the harness floor are no hand-kept lists."""

from __future__ import annotations

import pytest

from asyncbench import engines
from asyncbench.engines.lsm.adapter import LsmEngine
from asyncbench.engines.memory import MemoryEngine
from asyncbench.engines.mysql import MySqlEngine
from asyncbench.workloads.profile_store.kv_store import STORE_NAMES as PROFILE_STORES


def test_sets_are_what_they_were() -> None:
    assert engines.all_engines() == ("lsm", "rocksdb", "sqlite", "mysql", "postgres", "redis")
    assert engines.default_engines() == ("lsm", "rocksdb", "sqlite")
    assert engines.harness_floor() == "memory"
    # the names the rest of the code reads, derived
    assert engines.all_engines() == engines.ALL_ENGINES and engines.default_engines() == engines.DEFAULT_ENGINES
    assert engines.HARNESS_FLOOR == "memory"


def test_sets_follow_the_class_attributes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(LsmEngine, "in_all", False)
    assert "lsm" not in engines.all_engines() and "lsm" not in engines.default_engines()
    monkeypatch.setattr(MySqlEngine, "needs_server", False)
    assert engines.default_engines() == ("rocksdb", "sqlite", "mysql")
    monkeypatch.setattr(MemoryEngine, "in_all", True)
    assert engines.all_engines()[-1] == "memory"


def test_the_harness_floor_says_so_in_its_facts(tmp_path) -> None:
    from asyncbench.engine import EngineConfig

    assert MemoryEngine(EngineConfig("memory", tmp_path, stores=PROFILE_STORES)).facts().harness_floor
    assert not LsmEngine(EngineConfig("lsm", tmp_path, stores=PROFILE_STORES)).facts().harness_floor
