"""The small Workload Protocol and the capability Protocols (asyncbench/workload_capabilities.py):
which workload has which, what a plug-in writes, and what the framework does when a
capability is absent (the defaults the former WorkloadDefaults base stated, now said once
by the framework: the same words, so outputs do not change)."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import ROOT

from asyncbench import workloads
from asyncbench.workload import SettingError, Workload
from asyncbench.workload_capabilities import (
    accelerated,
    batch_context,
    can_crash,
    capabilities,
    kernels_status,
    mix_figures,
    own_store_problem,
    phase_params,
    prefix_checksums,
    reference_tables,
    stream_count,
    verifier,
    verify_expected,
    verify_note,
    verify_ops,
)
from asyncbench.workloads import workload

EXAMPLES = ROOT / "examples"
CORE = [
    "checksum", "combine", "count_names", "counts", "draw_plan", "kv_stores", "name", "phase_items",
    "phases", "plan_writes", "record_memory", "store", "unit",
]  # fmt: skip


@pytest.fixture
def counter() -> Iterator[Any]:
    sys.path.insert(0, str(EXAMPLES))
    try:
        import counter_workload

        yield counter_workload
    finally:
        sys.path.remove(str(EXAMPLES))


def test_the_core_protocol_is_what_every_workload_writes() -> None:
    assert workloads._members() == CORE


def test_each_shipped_workload_has_the_capabilities_its_typed_tuple_claims() -> None:
    from asyncbench.workloads.profile_store import workload as ps
    from asyncbench.workloads.ycsb import workload as ycsb

    assert capabilities(workload("profile_store")) == [
        "PhaseParams", "StreamCounts", "BatchContext", "Verifies", "ReferenceTables", "CompiledKernels",
        "ReuseProof", "CrashRecovery", "MixedPhases", "OwnStoreEngines",
    ]  # fmt: skip
    assert capabilities(workload("ycsb")) == [
        "OwnSettings", "PhaseParams", "StreamCounts", "BatchContext", "CompiledKernels", "CrashRecovery",
        "BoundedPhases", "MixedPhases", "PlanConversion",
    ]  # fmt: skip
    # the typed tuples (what mypy checks) hold the registry's instance, once per capability claimed
    for module, name in ((ps, "profile_store"), (ycsb, "ycsb")):
        assert all(c is workload(name) for c in module.CAPABILITIES)
        assert len(module.CAPABILITIES) == len(capabilities(workload(name)))


def test_the_counter_example_writes_the_core_and_a_verify_phase_only(counter: Any) -> None:
    wl = counter.CounterWorkload()
    assert isinstance(wl, Workload) and capabilities(wl) == ["Verifies"]
    tree = ast.parse((EXAMPLES / "counter_workload.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "CounterWorkload")
    assert cls.bases == []  # no base class states what it lacks
    written = set()
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            written.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            written.add(node.target.id)
        elif isinstance(node, ast.Assign):
            written.update(t.id for t in node.targets if isinstance(t, ast.Name))
    assert written == {*CORE, "verify_ops", "verify_note", "verify_checksum"}
    assert len(written) == 16  # docs/extending.md states it; it wrote 17 over a base class before


def test_an_absent_capability_means_what_the_former_defaults_said(counter: Any) -> None:
    wl = counter.CounterWorkload()
    kind = wl.phases["increment"]
    assert accelerated(wl) is True
    assert kernels_status(wl) == "counter: no compiled kernels (pure Python by design)"
    assert stream_count(wl, "increments") == "increments"
    assert batch_context(wl, 7) is None
    assert can_crash(wl, kind) is False
    assert mix_figures(wl, kind, [1, 2]) is None
    assert reference_tables(wl) is None
    assert phase_params(wl, kind, {}, {}) == {}
    with pytest.raises(SettingError, match=r"^zipf: unknown key: the counter workload's 'increment' phase takes none$"):
        phase_params(wl, kind, {"zipf": 1, "zz": 2}, {})
    assert own_store_problem(wl, int) == (
        "int is its own store (it keeps Engine.worker) and gives no key/value, SQL or in-process primitives "
        "(asyncbench.store): it cannot run the counter workload"
    )
    with pytest.raises(NotImplementedError, match="a counter store is not reused"):
        verify_expected(wl, None, [])
    with pytest.raises(NotImplementedError, match="cannot run for a duration"):
        prefix_checksums(wl, kind, [], [])
    assert (verify_ops(wl), verify_note(wl)) == (1, wl.verify_note)
    ycsb = workload("ycsb")  # no verify phase: no note, no operations, and no verifier
    assert (verify_ops(ycsb), verify_note(ycsb)) == (0, None)
    with pytest.raises(TypeError, match="no verify phase"):
        verifier(ycsb)


def test_the_registry_refuses_a_verify_kind_without_a_verify_phase(counter: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    lacking = {k: v for k, v in vars(counter.CounterWorkload).items() if not k.startswith("__") and k not in ("verify_ops", "verify_note", "verify_checksum")}
    counter.NoVerify = type("NoVerify", (), lacking)
    monkeypatch.setitem(workloads.REGISTRY, "counter", "counter_workload:NoVerify")
    workloads._load.cache_clear()
    try:
        with pytest.raises(TypeError, match=r"has a verify phase kind \(verify\) but does not implement .*Verifies"):
            workload("counter")
    finally:
        del counter.NoVerify
        workloads._load.cache_clear()
