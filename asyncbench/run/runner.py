"""Runs a validated plan: engine after engine, phase after phase, on one event loop.

Each engine run is bounded by the per-engine timeout; a failure or timeout ends that
engine's run with the phases completed so far and moves on. Results are written after
every engine, so an interrupted run still leaves its partial report.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict
from functools import partial
from pathlib import Path
from time import perf_counter
from typing import Any, TypeVar

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
    Capacity,
    EngineResult,
    Gates,
    PhaseCost,
    PhaseResult,
    PlanPhase,
    RunResult,
    Status,
)
from asyncbench.run.capacity.capacity import SearchRecord, capacity_of_phase
from asyncbench.run.checks.validate import validate
from asyncbench.run.crash.crash import CrashRecord, crash_phase, recover_phase
from asyncbench.run.isolated.isolation import ChildEngineRun
from asyncbench.run.observe.gc_policy import harness_frozen
from asyncbench.run.observe.observers import BatchDone, Observer
from asyncbench.run.phase.dispatch import Host, OtherDone, run_action, run_operations
from asyncbench.run.phase.phase_loop import PhaseOutcome
from asyncbench.run.phase.phase_rows import add_figures, phase_prefix, phase_row
from asyncbench.run.phase.stores import worker_stores
from asyncbench.run.reuse import reuse, reuse_proof
from asyncbench.run.sequence.engine_runs import EngineRunner, ScaleOut
from asyncbench.run.sequence.phase_sequence import PhaseSequence, Ran
from asyncbench.slo import parse_bound_ns
from asyncbench.workload import DrawnPlan, MixFigures, PhaseKind, PlanCounts
from asyncbench.workload_capabilities import accelerated, batch_context, mix_figures

T = TypeVar("T")

CLOSE_GRACE_SECONDS = 60.0
#: The step once every phase has completed (storage figure, close, clean-up remain).
AFTER_LAST_PHASE = "after the last phase"


class EngineRun:
    """One engine through the whole phase list in this process; keeps what completed if it
    stops early. The phases are sequenced by :class:`~asyncbench.run.sequence.phase_sequence.PhaseSequence`;
    this class is where their work runs (its :class:`~asyncbench.run.sequence.phase_sequence.PhaseExecutor`:
    this process's workers over the engine it opened)."""

    def __init__(
        self, cfg: BenchConfig, level: Level, name: str, plan: DrawnPlan, observer: Observer, sampler: MemorySampler
    ) -> None:
        self.cfg, self.level, self.name, self.plan, self._observer, self.sampler = (
            cfg,
            level,
            name,
            plan,
            observer,
            sampler,
        )
        self.result = EngineResult(engine=name)
        self.sequence = PhaseSequence(cfg, name, observer, self.result, self)
        self.step = "setup"  # the step outside the phases: setup, open, after the last phase
        self.opened = False  # the engine opened (so created its marked store) in this run
        self.completed = False  # every phase ran: the store is what the plan builds
        self.engine: Engine | None = None
        self.background: TaskGroup | None = None
        self.ctx = batch_context(cfg.workload_impl, cfg.seed)
        #: The crashed phase's acknowledgements, for the recover phase after it (asyncbench.run.crash.crash).
        self.crash: CrashRecord | None = None
        self._items: Sequence[object] = ()  # the running phase's items (``prepare``'s)

    @property
    def current(self) -> str | None:
        """The phase running now (a display name; "open" while the engine opens)."""
        return self.sequence.current

    @property
    def observer(self) -> Observer:
        return self._observer

    @observer.setter
    def observer(self, observer: Observer) -> None:
        """The isolated child sets its observers once the run exists (its result writer
        observes the run's own result): the phases report to them too."""
        self._observer = self.sequence.observer = observer

    def _engine_config(self) -> EngineConfig:
        return EngineConfig(
            name=self.name,
            data_dir=store_root(self.cfg.data, self.level.profiles, self.cfg.workload_impl.unit) / self.name,
            settings=self.cfg.engine_settings.get(self.name, {}),
            limit=self.cfg.limit,
            seed=self.cfg.seed,
            workers=self.level.workers,
            stores=self.cfg.workload_impl.kv_stores,
        )

    async def run(self) -> EngineResult:
        # The harness's objects are frozen before the engine makes its first: no garbage
        # collection inside a phase walks them (asyncbench.run.observe.gc_policy).
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
                await self.sequence.logical_figures()
            try:  # an observer fault (a log on a full disk) must not end the whole benchmark
                self.observer.engine_end(res)
            except Exception as exc:
                res.notes.append(f"reporting the engine's end failed: {type(exc).__name__}: {exc}")
        return res

    async def _run_phases(self) -> None:
        res = self.result
        sequence = self.sequence
        self.step = "setup"
        cls = engine_class(self.name)
        econf = self._engine_config()
        if not self.cfg.reuse_data:  # (a reuse run creates nothing: the store must be there)
            make_real_dir(econf.data_dir)  # never through a symlink or over a file
        self.step = "open"
        self.engine = cls(econf)
        res.facts = self.engine.facts()
        with anyio.move_on_after(self.cfg.timeout_seconds) as scope:
            sequence.current = "open"
            assert self.background is not None
            if self.cfg.reuse_data:  # the store an earlier run built: its fingerprint first
                found = await self.engine.read_fingerprint()
                expected = reuse.fingerprint(self.cfg, self.name, self.plan.counts)
                sequence.store_updated = reuse.check(found, expected, self.engine.data_dir, self.cfg.workload_impl)
                sequence.proof = proof = await anyio.to_thread.run_sync(
                    reuse_proof.expectations,
                    self.cfg,
                    found,
                    self.plan,
                    self.level.workers,
                    sequence.store_updated,
                    self.engine.data_dir,
                )
                if proof.unchecked:
                    res.notes.append("reused store: not proven against its build: " + "; ".join(proof.unchecked))
                await self.engine.open(False, self.background)  # checks the store is intact
            else:
                await self.engine.open(True, self.background)
                self.opened = True  # the store is the engine's own now: --clean-data may delete it
            await sequence.run()
            self.step = AFTER_LAST_PHASE
            await sequence.storage_after()
            self.completed = True
        if sequence.skipped:
            res.notes.append("reused store: skipped " + "; ".join(sequence.skipped))
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
        later ``--reuse-data`` run can check what it holds (``asyncbench.run.reuse.reuse``)."""
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

    # --- the PhaseExecutor: a phase's work on this process's workers -------------------
    def _opened(self) -> Engine:
        assert self.engine is not None
        return self.engine

    @property
    def storage_changes_state(self) -> str | None:
        return None if self.engine is None else self.engine.storage_changes_state

    async def needs_stabilization(self) -> bool:
        return self._opened().needs_stabilization

    async def prepare(self, index: int, spec: PhaseSpec, kind: PhaseKind) -> int:
        self._items = self.cfg.workload_impl.phase_items(kind, spec.stream, spec.count, self.plan, dict(spec.params))
        # a capacity search's operations are its probes', not known ahead: a pulsing bar
        return 0 if spec.capacity else len(self._items)

    async def _metered(self, work: Callable[[Engine], Awaitable[T]]) -> tuple[T, PhaseCost | None]:
        """``work`` on the engine, with its cost measured around it (the snapshots outside
        its time; the engine after it, a reopen's fresh one)."""
        engine = self._opened()
        meter = CostMeter(engine) if cost_enabled() else None
        if meter is not None:
            await meter.start()
        try:
            out = await work(engine)
        except BaseException:
            if meter is not None:
                meter.close()
            raise
        return out, None if meter is None else await meter.stop(self.engine or engine)

    async def operations(self, index: int, spec: PhaseSpec, kind: PhaseKind, rate: Rate | None) -> Ran:
        items = self._items
        # P comes from the engine's config (set once from the level): the engine opened
        # that many connections, and the phase runs that many workers
        engine = self._opened()
        handles = worker_stores(self.cfg.workload_impl, engine)
        # the marks go to unnamed temporary files (the system's temporary directory), not memory
        latency = PhaseRecorder(len(handles))

        async def timed(engine: Engine) -> tuple[PhaseOutcome, int]:
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
            return outcome, engine.take_retries()  # the phase's retried writes, over all workers

        try:
            (outcome, retries), cost = await self._metered(timed)
        except BaseException:
            latency.close()
            raise

        def figures(pr: PhaseResult) -> None:
            if outcome.ran is not None:  # a phase that ran for a duration: its checksum is its whole prefix's
                pr.prefix, pr.checksum = phase_prefix(spec, kind, items, outcome.ran, self.cfg.workload_impl)
            with latency:  # the log's batch lines went out live, batch by batch (the observer's batch)
                add_figures(pr, latency, rate)

        return Ran(
            outcome.ops, outcome.seconds, outcome.checksum, retries, stalls=outcome.stalls, cost=cost, figures=figures
        )

    async def capacity(
        self, index: int, spec: PhaseSpec, kind: PhaseKind, record: Callable[[SearchRecord], None]
    ) -> Ran:
        items = self._items

        async def search(engine: Engine) -> tuple[Capacity, int, float, str | None]:
            return await capacity_of_phase(
                self.cfg, index, spec, items, engine, self.ctx, partial(self.observer.probe, self.name, spec.name), record
            )

        (found, ops, seconds, checksum), cost = await self._metered(search)
        return Ran(ops, seconds, checksum, capacity=found, cost=cost)

    async def action(self, index: int, spec: PhaseSpec, kind: PhaseKind) -> Ran:
        assert self.background is not None
        background = self.background

        async def act(engine: Engine) -> OtherDone:
            return await run_action(
                kind.action, Host(engine, background, self._adopt, self.plan.counts.profiles, self.cfg.workload_impl)
            )

        done, cost = await self._metered(act)
        return Ran(done.ops, done.seconds, done.checksum, close_seconds=done.close_seconds, cost=cost)

    async def mix(self, index: int, spec: PhaseSpec, kind: PhaseKind) -> MixFigures | None:
        return mix_figures(self.cfg.workload_impl, kind, self._items)

    async def storage(self) -> int | None:
        return None if self.engine is None else await self.engine.measure_storage()

    async def drawn_plan(self) -> DrawnPlan:
        return self.plan

    async def crash_or_recover(self, index: int, spec: PhaseSpec) -> PhaseResult:
        """A phase that ends in a crash, or the recover phase after it (asyncbench.run.crash.crash)."""
        engine = self._opened()
        kind = self.cfg.workload_impl.phases[spec.kind]
        self.observer.phase_start(self.name, spec.name, spec.crash.after if spec.crash else 0, spec.kind, spec.stream)
        if spec.crash is not None:
            self.crash = record = await crash_phase(self.cfg, self.level, index, engine, self.plan)
            pr = phase_row(index, spec, kind, record.acknowledged, record.seconds, None, False, None)
            self.result.notes.append(
                f"{spec.name}: {spec.crash.how} after {record.acknowledged:_d} acknowledged operations; the store "
                "is then no longer the one the plan builds (no fingerprint, no reuse)"
            )
            return pr
        assert self.crash is not None and self.background is not None  # (the plan's order is checked)
        self.engine = None  # a failing constructor must not leave the closed engine to close again
        fresh = type(engine)(engine.config)
        self.engine = fresh
        row, seconds = await recover_phase(self.crash, self.plan, engine, fresh, self.background, self.cfg.workload_impl)
        self.result.durability += [*self.crash.earlier, row]  # the earlier points, checked on copies
        return phase_row(index, spec, kind, row.checked, seconds, None, False, None)

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
        accelerated=accelerated(cfg.workload_impl),
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

    The config is checked whole first (:func:`asyncbench.run.checks.validate.validate`, a
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
        scale: ScaleOut | None = None,
    ) -> None:
        validate(cfg)
        self.cfg, self.observer, self.started_utc, self.on_progress = cfg, observer, started_utc, on_progress
        self.log_path = log_path
        #: --processes/--cluster: the engines whose workers run across client processes (the
        #: command line's choice; scaled runs draw no plan here: every client process draws its own)
        self.scale = scale
        self.results: list[RunResult] = []
        self.sampler = MemorySampler()

    async def run(self) -> list[RunResult]:
        async with anyio.create_task_group() as tg:
            if not self.cfg.isolate:  # isolated engines sample their own process
                tg.start_soon(self.sampler.run)
            cfg = self.cfg
            scale = self.scale
            plans: dict[int, DrawnPlan | None] = {}  # profiles -> the workload's plan, or None
            for level in cfg.levels():
                if level.profiles not in plans:  # children draw their own; one plan serves every P
                    own = cfg.isolate or (scale is not None and all(scale.runs(n) for n in cfg.engines))
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
                        scaled = scale is not None and scale.runs(name)
                        engine_run: EngineRunner
                        if scale is not None and scaled:
                            engine_run = scale.engine_run(cfg, level, name, self.observer)
                        elif plan is None:
                            engine_run = ChildEngineRun(cfg, level, name, self.log_path, self.observer, repeat)
                        else:
                            engine_run = EngineRun(cfg, level, name, plan, self.observer, self.sampler)
                        try:
                            await engine_run.run()
                            stopped = False
                        finally:  # an interrupted engine still reports what it completed
                            if scale is not None and not scaled:
                                engine_run.result.notes.append(scale.ordinary_note(name))
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
