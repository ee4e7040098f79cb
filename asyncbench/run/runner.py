"""Runs a validated plan: engine after engine, phase after phase, on one event loop.

Each engine run is bounded by the per-engine timeout; a failure or timeout ends that
engine's run with the phases completed so far and moves on. Results are written after
every engine, so an interrupted run still leaves its partial report.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import asdict
from functools import partial
from pathlib import Path
from time import perf_counter
from typing import Any

import anyio
from anyio.abc import TaskGroup

from asyncbench.config import BenchConfig, Level, PhaseSpec
from asyncbench.dirs.paths import store_root
from asyncbench.dirs.run_dirs import make_real_dir
from asyncbench.engine import Engine, EngineConfig, EngineUnavailable
from asyncbench.engines import engine_class
from asyncbench.measure import environment
from asyncbench.measure.cost import CostMeter, cost_enabled
from asyncbench.measure.latency_recorder import PhaseRecorder
from asyncbench.measure.memory_sampler import MemorySampler
from asyncbench.rate import Rate
from asyncbench.result import (
    NOT_STARTED,
    EngineResult,
    Gates,
    OpenLoop,
    PhaseCost,
    PhaseResult,
    PlanPhase,
    RunResult,
    StallRecord,
    Status,
)
from asyncbench.run import reuse, reuse_proof
from asyncbench.run.capacity import SearchRecord, capacity_of_phase, stopped_search
from asyncbench.run.crash import CrashRecord, crash_phase, recover_phase
from asyncbench.run.dispatch import Host, run_action, run_operations
from asyncbench.run.distributed import DistributedEngineRun, Placement, ordinary_path_note
from asyncbench.run.gc_policy import harness_frozen
from asyncbench.run.isolation import ChildEngineRun
from asyncbench.run.observers import BatchDone, Observer
from asyncbench.run.phase_loop import RanBatches
from asyncbench.run.phase_rows import (
    add_figures,
    phase_mix,
    phase_prefix,
    phase_rate,
    phase_row,
    sweep_dipped,
)
from asyncbench.run.stores import worker_stores
from asyncbench.run.validate import validate
from asyncbench.slo import parse_bound_ns
from asyncbench.workload import Action, DrawnPlan, Group, PhaseKind, PlanCounts

CLOSE_GRACE_SECONDS = 60.0
#: The step once every phase has completed (storage figure, close, clean-up remain).
AFTER_LAST_PHASE = "after the last phase"


class EngineRun:
    """One engine through the whole phase list; keeps what completed if it stops early."""

    def __init__(
        self, cfg: BenchConfig, level: Level, name: str, plan: DrawnPlan, observer: Observer, sampler: MemorySampler
    ) -> None:
        self.cfg, self.level, self.name, self.plan, self.observer, self.sampler = (
            cfg,
            level,
            name,
            plan,
            observer,
            sampler,
        )
        self.result = EngineResult(engine=name)
        self.current: str | None = None  # the phase running now (a display name)
        self.step = "setup"  # the step outside the phases: setup, open, after the last phase
        self.opened = False  # the engine opened (so created its marked store) in this run
        self.completed = False  # every phase ran: the store is what the plan builds
        #: A reuse run (``cfg.reuse_data``): whether the reused store holds updated profiles.
        self.store_updated: bool | None = None
        self.skipped: list[str] = []  # phases a reuse run left out, with the reason
        #: A reuse run: the checksum each phase it runs must read (``asyncbench.run.reuse_proof``).
        self.proof: reuse_proof.Proof | None = None
        self.engine: Engine | None = None
        self.background: TaskGroup | None = None
        self.ctx = cfg.workload_impl.context(cfg.seed)
        self.dipped: set[int] = set()  # sweeps (by first level's index) whose achieved rate dipped
        #: The crashed phase's acknowledgements, for the recover phase after it (asyncbench.run.crash).
        self.crash: CrashRecord | None = None
        self._stalls: StallRecord | None = None  # the running phase's holds of the loop (_timed's)

    def _engine_config(self) -> EngineConfig:
        return EngineConfig(
            name=self.name,
            data_dir=store_root(self.cfg.data, self.level.profiles, self.cfg.workload_impl.unit) / self.name,
            settings=self.cfg.engine_settings.get(self.name, {}),
            limit=self.cfg.limit,
            seed=self.cfg.seed,
            workers=self.level.workers,
        )

    async def run(self) -> EngineResult:
        # The harness's objects are frozen before the engine makes its first: no garbage
        # collection inside a phase walks them (asyncbench.run.gc_policy).
        with harness_frozen():
            return await self._run()

    async def _run(self) -> EngineResult:
        res = self.result
        started = perf_counter()
        interrupted = False
        res.initial_rss_bytes = self.sampler.reset()
        self.observer.engine_start(self.name, self.plan.counts.profiles, self.cfg.workload_impl.unit)
        try:
            # A server engine's run lock is held from before the open that resets its table
            # until after the clean-up, across the reopen phase (Engine.exclusive). The
            # engine's background tasks (merges, WAL writers) live in the task group, from
            # before open() until after close(): anyio scopes must nest lexically.
            self.step = "open"
            async with (
                engine_class(self.name).exclusive(self._engine_config()),
                anyio.create_task_group() as background,
            ):
                self.background = background
                try:
                    await self._run_phases()
                finally:
                    closed = await self._close_quietly()
                    if closed:
                        await self._fingerprint_quietly()
                    await self._delete_quietly()
                    background.cancel_scope.cancel()
        except* EngineUnavailable as unavailable:
            missing = unavailable.exceptions[0]
            if self.name in self.cfg.optional_engines:
                res.set_status(Status.SKIPPED, None, str(missing))
            else:
                res.set_status(Status.FAILED, self.current or "open", str(missing))
        except* anyio.get_cancelled_exc_class():
            interrupted = True
            if self.step == AFTER_LAST_PHASE:  # every phase completed: the result is whole
                res.notes.append(
                    "interrupted after its last phase (while measuring storage or closing); every phase completed"
                )
            else:
                res.set_status(Status.INTERRUPTED, self.current)
            raise
        except* Exception as group:  # an engine fault ends this engine's run, not the benchmark
            res.fail_with(self.current or self.step, group.exceptions[0])
        finally:
            res.run_seconds = perf_counter() - started
            self.sampler.sample()
            res.peak_rss_bytes = self.sampler.peak
            res.peak_rss_anon_bytes = self.sampler.peak_anon
            res.peak_rss_file_bytes = self.sampler.peak_file
            if self.engine is not None:  # after open, an engine may know more (e.g. a server version)
                with contextlib.suppress(Exception):
                    res.facts = self.engine.facts()
            if not interrupted:  # (a stop must not wait for seconds of arithmetic)
                await self._logical_figures()
            try:  # an observer fault (a log on a full disk) must not end the whole benchmark
                self.observer.engine_end(res)
            except Exception as exc:
                res.notes.append(f"reporting the engine's end failed: {type(exc).__name__}: {exc}")
        return res

    async def _run_phases(self) -> None:
        res = self.result
        self.step = "setup"
        cls = engine_class(self.name)
        econf = self._engine_config()
        if not self.cfg.reuse_data:  # (a reuse run creates nothing: the store must be there)
            make_real_dir(econf.data_dir)  # never through a symlink or over a file
        self.step = "open"
        self.engine = cls(econf)
        res.facts = self.engine.facts()
        with anyio.move_on_after(self.cfg.timeout_seconds) as scope:
            self.current = "open"
            assert self.background is not None
            if self.cfg.reuse_data:  # the store an earlier run built: its fingerprint first
                found = await self.engine.read_fingerprint()
                expected = reuse.fingerprint(self.cfg, self.name, self.plan.counts)
                self.store_updated = reuse.check(found, expected, self.engine.data_dir, self.cfg.workload_impl)
                self.proof = await anyio.to_thread.run_sync(
                    reuse_proof.expectations,
                    self.cfg,
                    found,
                    self.plan,
                    self.level.workers,
                    self.store_updated,
                    self.engine.data_dir,
                )
                if self.proof.unchecked:
                    res.notes.append(
                        "reused store: not proven against its build: " + "; ".join(self.proof.unchecked)
                    )
                await self.engine.open(False, self.background)  # checks the store is intact
            else:
                await self.engine.open(True, self.background)
                self.opened = True  # the store is the engine's own now: --clean-data may delete it
            for index, spec in enumerate(self.cfg.phases):
                self.current = spec.name
                await self._phase(index, spec)
            self.current = None
            self.step = AFTER_LAST_PHASE
            if res.storage_bytes is None:
                res.storage_bytes = await self.engine.measure_storage()
            self.completed = True
        if self.skipped:
            res.notes.append("reused store: skipped " + "; ".join(self.skipped))
        if scope.cancelled_caught:
            res.set_status(Status.TIMED_OUT, self.current, f"{self.cfg.timeout_seconds:g} seconds")

    async def _close_quietly(self) -> bool:
        """Close the engine; True if it closed without error."""
        if self.engine is None:
            return False
        with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_GRACE_SECONDS):
            try:
                await self.engine.close()
                return True
            except Exception as exc:  # closing after a failure must not hide the failure
                self.result.notes.append(f"close failed: {type(exc).__name__}: {exc}")
        return False

    async def _fingerprint_quietly(self) -> None:
        """A store this run built through every phase and keeps gets its fingerprint, so a
        later ``--reuse-data`` run can check what it holds (``asyncbench.run.reuse``)."""
        if self.engine is None or not self.opened or not self.completed or self.cfg.clean_data:
            return
        if self.crash is not None:  # a crash left a store the plan does not describe
            return
        fp = reuse.fingerprint(self.cfg, self.name, self.plan.counts, self.level.workers, self.result.phases)
        with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_GRACE_SECONDS):
            try:
                if not any(e["kind"] == "verify" for e in fp["checksums"]):  # no verify phase after the writes
                    verify = await anyio.to_thread.run_sync(reuse_proof.build_verify, self.cfg, self.plan)
                    fp = reuse.fingerprint(
                        self.cfg, self.name, self.plan.counts, self.level.workers, self.result.phases, verify
                    )
                await self.engine.write_fingerprint(fp)
            except Exception as exc:  # the run's results stand; the store is just not reusable
                self.result.notes.append(f"the store's fingerprint was not written: {type(exc).__name__}: {exc}")

    async def _delete_quietly(self) -> None:
        """After close: the engine deletes its own store unless the run keeps data."""
        if self.engine is None or not self.opened or not self.cfg.clean_data:
            return
        with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_GRACE_SECONDS):
            try:
                if not await self.engine.delete_store():
                    self.result.notes.append(
                        f"store kept at {self.engine.data_dir}: the engine cannot delete it"
                    )
            except Exception as exc:  # clean-up must not hide the run's outcome
                self.result.notes.append(f"deleting the store failed: {type(exc).__name__}: {exc}")

    async def _phase(self, index: int, spec: PhaseSpec) -> None:
        engine = self.engine
        assert engine is not None
        kind = self.cfg.workload_impl.phases[spec.kind]
        close_seconds: float | None = None

        def result(
            ops: int, seconds: float, checksum: str | None = None, skipped: bool = False
        ) -> PhaseResult:
            return phase_row(index, spec, kind, ops, seconds, checksum, skipped, close_seconds)

        rate = phase_rate(spec)
        if spec.sweep is not None and spec.sweep in self.dipped:  # a sweep stops above its dip
            pr = result(0, 0.0, skipped=True)
            pr.open_loop = OpenLoop(rate=rate.ops_per_s, arrivals=rate.arrivals) if rate else None
            self.result.phases.append(pr)
            self.observer.phase_end(self.name, pr)
            return
        why = None if self.store_updated is None else reuse.skip_reason(spec, self.store_updated, self.cfg.workload_impl)
        if why is not None:
            self.skipped.append(f"{spec.name} ({why})")
        if why is not None or (kind.action is Action.STABILIZE and not engine.needs_stabilization):
            pr = result(0, 0.0, skipped=True)
            self.result.phases.append(pr)
            self.observer.phase_end(self.name, pr)
            return
        if spec.crash is not None or kind.action is Action.RECOVER:
            await self._crash_or_recover(index, spec, engine)
            return
        items = self.cfg.workload_impl.phase_items(kind, spec.stream, spec.count, self.plan, dict(spec.params))
        # a capacity search's operations are its probes', not known ahead: a pulsing bar
        self.observer.phase_start(self.name, spec.name, 0 if spec.capacity else len(items), spec.kind, spec.stream)
        checksum: str | None = None
        ops = retries = 0
        meter = CostMeter(engine) if cost_enabled() else None
        if meter is not None:
            await meter.start()  # (snapshots outside the phase's time)
        found = None
        ran: RanBatches | None = None
        searches: list[SearchRecord] = []  # a capacity search's probes as they go
        started = perf_counter()
        try:
            if spec.capacity:  # a capacity search instead of one run (asyncbench.run.capacity)
                found, ops, seconds, checksum = await capacity_of_phase(
                    self.cfg, index, spec, items, engine, self.ctx, partial(self.observer.probe, self.name, spec.name),
                    searches.append,
                )  # fmt: skip
                latency = None
            else:
                checksum, ops, retries, seconds, latency, close_seconds, ran = await self._timed(
                    index, spec, items, rate, engine
                )
        except BaseException:
            if meter is not None:
                meter.close()
            if searches:  # a stopped search keeps the probes it completed (the partial result's)
                self.result.phases.append(stopped_search(result, searches[0], perf_counter() - started))
            raise
        cost = None if meter is None else await meter.stop(self.engine or engine)
        prefix = None
        if ran is not None:  # a phase that ran for a duration: its checksum is its whole prefix's
            prefix, checksum = phase_prefix(spec, kind, items, ran, self.cfg.workload_impl)
        pr = result(ops, seconds, checksum)
        pr.prefix = prefix
        pr.retries = retries
        pr.stalls, self._stalls = self._stalls, None
        pr.capacity = found
        if kind.action is Action.SETTLE:
            self.result.storage_bytes = await (self.engine or engine).measure_storage()  # untimed
        if cost is not None:
            await self._cost_figures(kind, cost)
        pr.cost = cost
        if latency is not None:  # after the phase's clock stopped
            with latency:  # the log's batch lines went out live, batch by batch (the observer's batch)
                add_figures(pr, latency, rate)
        pr.mix = phase_mix(self.cfg.workload_impl.mix_figures(kind, items))
        sweep_dipped(pr, spec, rate, self.dipped, self.result.notes, self.cfg.phases[index + 1 :])
        if self.proof is not None and checksum is not None:  # a reused store proves its data
            self.proof.check(index, spec, checksum)
        self.result.phases.append(pr)
        self.observer.phase_end(self.name, pr)

    async def _crash_or_recover(self, index: int, spec: PhaseSpec, engine: Engine) -> None:
        """A phase that ends in a crash, or the recover phase after it (asyncbench.run.crash)."""
        kind = self.cfg.workload_impl.phases[spec.kind]
        self.observer.phase_start(self.name, spec.name, spec.crash.after if spec.crash else 0, spec.kind, spec.stream)
        if spec.crash is not None:
            self.crash = record = await crash_phase(self.cfg, self.level, index, engine, self.plan)
            pr = phase_row(index, spec, kind, record.acknowledged, record.seconds, None, False, None)
            self.result.notes.append(
                f"{spec.name}: {spec.crash.how} after {record.acknowledged:_d} acknowledged operations; the store "
                "is then no longer the one the plan builds (no fingerprint, no reuse)"
            )
        else:
            assert self.crash is not None and self.background is not None  # (the plan's order is checked)
            self.engine = None  # a failing constructor must not leave the closed engine to close again
            fresh = type(engine)(engine.config)
            self.engine = fresh
            row, seconds = await recover_phase(self.crash, self.plan, engine, fresh, self.background, self.cfg.workload_impl)
            self.result.durability += [*self.crash.earlier, row]  # the earlier points, checked on copies
            pr = phase_row(index, spec, kind, row.checked, seconds, None, False, None)
        self.result.phases.append(pr)
        self.observer.phase_end(self.name, pr)

    async def _logical_figures(self) -> None:
        """Each measured phase's logical bytes written and the live data's logical size after
        it: the yardstick of write and space amplification (``Workload.plan_writes``).

        Computed once the engine is done, never before its phases: at 2M profiles it is
        seconds of generating profiles again and replaying the updates, millions of objects
        made and freed, and done before the engine opened it left the phases a different heap
        and garbage collector state than a run without the cost measurement (ops/s 0.95x on
        a quiet machine, benchmarks/bench_cost_overhead.py). Nothing reads these figures
        before the report."""
        costed = [pr for pr in self.result.phases if pr.cost is not None]
        if not costed:
            return
        phases = [(self.cfg.workload_impl.phases[p.kind], p.stream, p.count) for p in self.cfg.phases]
        try:
            logical = await anyio.to_thread.run_sync(self.cfg.workload_impl.plan_writes, phases, self.plan, self.cfg.seed)
        except Exception as exc:  # a figure lost, never the run
            for pr in costed:
                assert pr.cost is not None
                pr.cost.not_measured["logical"] = f"{type(exc).__name__}: {exc}"
            return
        for pr in costed:
            assert pr.cost is not None
            written, live = logical[pr.index]
            pr.cost.logical_write_bytes = written
            if pr.kind.group is Group.WRITE or pr.kind.action is Action.SETTLE:
                pr.cost.logical_live_bytes = live

    async def _cost_figures(self, kind: PhaseKind, cost: PhaseCost) -> None:
        """After a write phase or settle: the storage (space amplification's numerator),
        measured now, untimed; the logical figures come after the run (:meth:`_logical_figures`)."""
        if kind.group is not Group.WRITE and kind.action is not Action.SETTLE:
            return
        if kind.action is Action.SETTLE:
            cost.storage_bytes = self.result.storage_bytes
            return
        engine = self.engine
        if engine is not None and engine.storage_changes_state is not None:
            cost.not_measured["storage"] = engine.storage_changes_state
            return
        try:
            cost.storage_bytes = None if engine is None else await engine.measure_storage()
        except Exception as exc:  # a figure lost, never the run
            cost.not_measured["storage"] = f"{type(exc).__name__}: {exc}"

    async def _timed(
        self, index: int, spec: PhaseSpec, items: Sequence[object], rate: Rate | None, engine: Engine
    ) -> tuple[str | None, int, int, float, PhaseRecorder | None, float | None, RanBatches | None]:
        """The phase itself, timed: (checksum, ops, retries, seconds, latency, close seconds,
        and a phase with a duration its batches)."""
        kind = self.cfg.workload_impl.phases[spec.kind]
        checksum: str | None = None
        ops = retries = 0
        close_seconds: float | None = None
        latency = None
        ran = None
        if kind.action is Action.OPERATIONS:
            # P comes from the engine's config (set once from the level): the engine opened
            # that many connections, and the phase runs that many workers
            handles = worker_stores(self.cfg.workload_impl, engine)
            # the marks go to unnamed temporary files (the system's temporary directory), not memory
            latency = PhaseRecorder(len(handles))
            try:
                outcome = await run_operations(
                    kind,
                    items,
                    handles,
                    self.ctx,
                    self.cfg.batch_size,
                    self._batch_hook(spec.name, latency),
                    rate,
                    self.cfg.seed,
                    index,
                    spec.duration,
                    stalls=True,
                    wl=self.cfg.workload_impl,
                )
            except BaseException:
                latency.close()
                raise
            ops, checksum, seconds, ran = outcome.ops, outcome.checksum, outcome.seconds, outcome.ran
            self._stalls = outcome.stalls
            retries = engine.take_retries()  # the phase's retried writes, over all workers
        else:
            assert self.background is not None
            done = await run_action(
                kind.action, Host(engine, self.background, self._adopt, self.plan.counts.profiles, self.cfg.workload_impl)
            )
            checksum, ops, seconds, close_seconds = done.checksum, done.ops, done.seconds, done.close_seconds
        return checksum, ops, retries, seconds, latency, close_seconds, ran

    def _adopt(self, engine: Engine | None) -> None:
        """A reopen's fresh adapter (None while it is made: a failing constructor must not
        leave a closed engine to close again)."""
        self.engine = engine

    def _batch_hook(
        self, phase: str, latency: PhaseRecorder
    ) -> Callable[[int, int, int, float, list[int]], None]:
        observer_batch = self.observer.batch
        add = latency.add
        engine = self.name
        done = 0

        def hook(
            worker: int, index: int, ops: int, seconds: float, marks: list[int], intended: Any = None, blocked: int = 0
        ) -> None:
            nonlocal done
            done += ops
            stamps = add(worker, ops, seconds, marks, intended, blocked)
            observer_batch(BatchDone(engine, phase, index, ops, seconds, done, worker, stamps, intended))

        return hook


def new_result(cfg: BenchConfig, level: Level, started_utc: str) -> RunResult:
    return RunResult(
        name=cfg.name,
        started_utc=started_utc,
        profiles=level.profiles,
        parallelism=level.parallelism,
        seed=cfg.seed,
        limit=cfg.limit,
        batch_size=cfg.batch_size,
        timeout_seconds=cfg.timeout_seconds,
        counts=asdict(level.counts),
        phases=[
            PlanPhase(cfg.workload_impl.phases[p.kind], p.name, p.stream, p.count, p.post_update, p.sweep, p.over_time) for p in cfg.phases
        ],
        source=cfg.source,
        environment=environment.collect(cfg.source, cfg.data, cfg.engines, cfg.workload_impl),
        isolated=cfg.isolate,
        repeat=cfg.repeat,
        warmup=cfg.warmup,
        accelerated=cfg.workload_impl.accelerated,
        workload=cfg.workload,
        gates=gates(cfg),
    )


def gates(cfg: BenchConfig) -> Gates:
    """What the run judges (the verdicts' thresholds), as the result keeps them."""

    def ns(bounds: dict[str, str]) -> dict[str, int]:
        return {name: parse_bound_ns(text) for name, text in bounds.items()}

    return Gates(
        slo_ns=ns(cfg.slo),
        slo_kinds_ns={kind: ns(b) for kind, b in cfg.slo_kinds.items()},
        check_rate=cfg.check_rate,
        require_rate=dict(cfg.require_rate),
    )


class Benchmark:
    """The whole invocation: every profile count, every engine; ``results`` grows as it goes.

    The config is checked whole first (:func:`asyncbench.run.validate.validate`, a
    :class:`~asyncbench.config.ConfigError` for the first setting it cannot run with), so a
    config built in code runs under the checks a plan and its flags get; on one the command
    line checked already, that is the same checks again, and changes nothing."""

    def __init__(
        self,
        cfg: BenchConfig,
        observer: Observer,
        started_utc: str,
        on_progress: Callable[[RunResult], None],
        log_path: Path,
        placement: Placement | None = None,
    ) -> None:
        validate(cfg)
        self.cfg, self.observer, self.started_utc, self.on_progress = cfg, observer, started_utc, on_progress
        self.log_path = log_path
        #: --processes/--cluster: each engine's workers across client processes (scaled runs
        #: draw no plan here: every client process draws its own)
        self.placement = placement or Placement(cfg.processes, cfg.cluster)
        self.results: list[RunResult] = []
        self.sampler = MemorySampler()

    async def run(self) -> list[RunResult]:
        async with anyio.create_task_group() as tg:
            if not self.cfg.isolate:  # isolated engines sample their own process
                tg.start_soon(self.sampler.run)
            cfg = self.cfg
            plans: dict[int, DrawnPlan | None] = {}  # profiles -> the workload's plan, or None
            for level in cfg.levels():
                if level.profiles not in plans:  # children draw their own; one plan serves every P
                    own = cfg.isolate or (
                        self.placement.scaled and all(engine_class(n).multi_process for n in cfg.engines)
                    )
                    plans = {level.profiles: None if own else await self._draw(level.counts)}
                plan = plans[level.profiles]
                run = new_result(cfg, level, self.started_utc)
                self.results.append(run)
                for repeat in range(cfg.repeat):  # interleaved: A B C A B C ...
                    if cfg.repeat > 1:
                        warm = " (warm-up: left out of the statistics)" if repeat < cfg.warmup else ""
                        self.observer.message(f"\n-- repeat {repeat + 1}/{cfg.repeat}{warm}")
                    for position, name in enumerate(cfg.engines):
                        stopped = True  # until the engine's run returns
                        self.observer.engine_context(repeat, level.profiles, level.parallelism)
                        engine_run: EngineRun | ChildEngineRun | DistributedEngineRun
                        if self.placement.scaled and engine_class(name).multi_process:
                            engine_run = DistributedEngineRun(cfg, level, name, self.observer, self.placement)
                        elif plan is None:
                            engine_run = ChildEngineRun(cfg, level, name, self.log_path, self.observer, repeat)
                        else:
                            engine_run = EngineRun(cfg, level, name, plan, self.observer, self.sampler)
                        try:
                            await engine_run.run()
                            stopped = False
                        finally:  # an interrupted engine still reports what it completed
                            if self.placement.scaled and not isinstance(engine_run, DistributedEngineRun):
                                engine_run.result.notes.append(ordinary_path_note(name, self.placement))
                            engine_run.result.repeat = repeat
                            engine_run.result.warmup = repeat < cfg.warmup
                            run.engines.append(engine_run.result)
                            if stopped:  # the engines of this round the stop left out, named as such
                                run.engines += self._not_started(cfg.engines[position + 1 :], repeat)
                            self.on_progress(run)
            tg.cancel_scope.cancel()
        return self.results

    def _not_started(self, names: Sequence[str], repeat: int) -> list[EngineResult]:
        """The engines a stopped run never started, each told to the observers (console, log)."""
        out = []
        for name in names:
            result = EngineResult(engine=name, repeat=repeat, warmup=repeat < self.cfg.warmup)
            result.set_status(Status.INTERRUPTED, None, NOT_STARTED)
            with contextlib.suppress(Exception):  # reporting must not hide the stop
                self.observer.engine_end(result)
            out.append(result)
        return out

    async def _draw(self, counts: PlanCounts) -> DrawnPlan:
        t0 = perf_counter()
        plan = await anyio.to_thread.run_sync(self.cfg.workload_impl.draw_plan, counts, self.cfg.seed)
        self.observer.message(f"plan for {counts.profiles:_d} {self.cfg.workload_impl.unit} drawn in {perf_counter() - t0:.2f} s")
        return plan
