"""Structured JSON logs: one line per operation batch, phase and run event, written live.

The log is for ``tail -f``: a batch's line reaches the file within about
:data:`POLL_SECONDS` of the batch's end, stamped with that end, while the phase still runs.
Writing must cost the measurement nothing, so nothing touches the file on the timed path:
every event goes into an in-memory queue (a ``deque`` append), and a writer thread drains
it every :data:`POLL_SECONDS`, renders what is still unrendered (a batch's line, with its
p99 and max from the batch's marks) and appends everything it drained in one ``os.write``
on an ``O_APPEND`` descriptor, so an isolated engine child appending to the same file
never interleaves with the parent inside a line. The producers never wait for the thread
and never wake it (waking would hand it the GIL in the middle of a phase).

Events other than batches are rendered by structlog (with orjson) in the caller, outside
any timed loop; they share the queue, so the file keeps the order the events happened in
(a phase's batch lines before its ``phase_end``).

The log is a by-product: a write that fails (a full disk) or stalls (a hung network file
system) must neither abort nor slow the benchmark (the old logger raised out of the
runner's ``finally`` and lost every engine after it). The first failure is kept in
:attr:`LogFile.error` and the log stops there; a writer that falls :data:`MAX_PENDING`
lines behind drops the newest lines and counts them; :meth:`LogFile.close` waits at most
:data:`CLOSE_SECONDS` for the writer. The run reports any of these at the end. The file
is opened without following a symlink and only if it is a regular file (the CLI checked
before the run that it is new or an asyncbench log). A new log starts with an identifying
record (:func:`~asyncbench.fs.ownership.log_first_record`), written before the writer
thread starts; an existing file is appended to only if it starts with one and is recorded
in its directory's ledger (:mod:`asyncbench.fs.ledger`) exactly as the run that last wrote
it closed it (one link, this user's, same inode, size and modification time), checked
again on the open descriptor: an empty file, a store's WAL, another tool's log, a user's
annotated copy of a log or a hard link to one is never written. The log is recorded as
open by this run while it writes it (its engine processes, ``joining``, may append), and
its identity is recorded when it is closed.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import structlog

from asyncbench.fs import ledger
from asyncbench.fs.ownership import is_own_log_head, log_first_record

__all__ = ["CLOSE_SECONDS", "MAX_PENDING", "POLL_SECONDS", "LogFile", "iso_utc", "open_log"]

#: How often the writer thread drains the queue: a line reaches the file this long (plus
#: the write) after its event at most.
POLL_SECONDS = 0.2
#: Lines queued and not yet written beyond which new lines are dropped (and counted): a
#: stalled file costs a bounded amount of memory, never the run.
MAX_PENDING = 200_000
#: How long closing the log waits for the writer to write what is queued.
CLOSE_SECONDS = 5.0
#: Drained lines are written in chunks of about this many bytes.
CHUNK_BYTES = 1 << 20
#: The writer renders lines (Python code, holding the GIL) for at most this long at a
#: stretch, then sleeps :data:`YIELD_SECONDS` with the GIL released. A thread that wants
#: the GIL back otherwise waits up to the interpreter's switch interval (5 ms): at a
#: target rate every operation is a batch and a line, a drain renders hundreds of them,
#: and the phase's workers (one event loop) stalled 4-5 ms each time (measured: response
#: p99 4-10 ms at 1_000-5_000 reads/s on the memory engine, service p99 4 µs).
HOLD_NS = 200_000
#: Long enough for a waiting thread to be woken and take the GIL (a futex wake-up is
#: 5-50 µs): a zero sleep hands it back to the writer before the waiter runs.
YIELD_SECONDS = 100e-6

Render = Callable[[Any], bytes]


def iso_utc(ns: int) -> str:
    """A wall-clock time in ns as structlog's ``TimeStamper(fmt="iso", utc=True)`` writes it."""
    return datetime.fromtimestamp(ns / 1e9, tz=UTC).isoformat().replace("+00:00", "Z")


class LogFile:
    """An append-only JSON-lines file written by its own thread; it records its first
    failure instead of raising, and never makes a caller wait."""

    def __init__(self, path: Path, joining: bool = False) -> None:
        """Open ``path`` for appending: a new file, or a log asyncbench started and closed
        (``joining``: one the parent process has open in this run)."""
        self.path = path
        self._joining = joining
        self.error: Exception | None = None
        self.dropped = 0  # lines not queued because the writer was MAX_PENDING lines behind
        flags = os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:  # a new log starts with the record that proves later that we started it
            self._fd = os.open(path, flags | os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            first: bytes | None = log_first_record()
        except FileExistsError:  # append only to a log this tool started
            self._fd = os.open(path, flags | os.O_RDWR)
            first = None
        try:
            st = os.fstat(self._fd)
            if not stat.S_ISREG(st.st_mode):
                raise OSError(f"{path} is not a regular file; the log must be one")
            if first is not None:
                os.write(self._fd, first)
            elif not is_own_log_head(os.pread(self._fd, 4096, 0)):
                raise OSError(
                    f"{path} is not a log asyncbench started (no asyncbench first record); not appended to"
                )
            else:
                problem = ledger.entry_problem(path, st, joining=joining)
                if problem is not None:
                    raise OSError(f"{path} {problem}; asyncbench appends only to logs it started, as it left them")
            self._ino = st.st_ino
            if not joining:
                ledger.record_open(path, st)
        except BaseException:
            os.close(self._fd)
            raise
        self._queue: deque[tuple[Render | None, Any]] = deque()
        self._closing = False
        self._wake = threading.Event()
        self._idle = threading.Condition()
        self._written = 0  # entries taken off the queue (written, or discarded after an error)
        self._queued = 0
        self._thread = threading.Thread(target=self._run, name="asyncbench-log-writer", daemon=True)
        self._thread.start()

    # --- producers (any thread; O(1), never blocking) -------------------------------------

    def msg(self, message: bytes) -> None:
        """Queue one rendered line (structlog's sink)."""
        self.later(None, message)

    info = msg  # the one level the observers log at

    def later(self, render: Render | None, item: Any) -> None:
        """Queue ``item``, to be rendered into one line by ``render(item)`` on the writer
        thread (``render`` None: ``item`` is the line's bytes)."""
        if self._closing or len(self._queue) >= MAX_PENDING:
            self.dropped += 1
            return
        self._queued += 1
        self._queue.append((render, item))

    def backlog(self) -> int:
        """Entries queued and not yet taken by the writer: a producer whose items are large
        (a batch's latency stamps) bounds by this what it leaves in memory."""
        return len(self._queue)

    # --- the writer thread ------------------------------------------------------------

    def _run(self) -> None:
        while True:
            closing = self._closing  # read before draining: what was queued before close is written
            try:
                self._drain()
            except Exception as exc:  # a bug here must stop the log, never leave producers waiting
                self.error = self.error or exc
                with self._idle:  # what was queued is given up (later lines are dropped as taken)
                    self._queue.clear()
                    self._written = self._queued
                    self._idle.notify_all()
            if closing:
                return
            self._wake.wait(POLL_SECONDS)
            self._wake.clear()

    def _drain(self) -> None:
        queue = self._queue
        clock = time.perf_counter_ns
        held_since = clock()
        while queue:
            chunk: list[bytes] = []
            size = 0
            taken = 0
            while queue and size < CHUNK_BYTES:
                if clock() - held_since > HOLD_NS:
                    time.sleep(YIELD_SECONDS)  # the GIL released: the event loop's turn
                    held_since = clock()
                render, item = queue.popleft()
                taken += 1
                if self.error is not None:
                    continue
                try:
                    line = item if render is None else render(item)
                except Exception as exc:  # a rendering bug stops the log, never the run
                    self.error = exc
                    continue
                chunk.append(line)
                size += len(line) + 1
            if chunk and self.error is None:
                chunk.append(b"")
                try:
                    self._write(b"\n".join(chunk))
                except Exception as exc:
                    self.error = exc
            with self._idle:
                self._written += taken
                self._idle.notify_all()

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    # --- control (the thread that owns the log) ---------------------------------------

    def flush(self, timeout: float = CLOSE_SECONDS) -> bool:
        """Wait until every line queued so far is written (or dropped after an error);
        False if the writer did not get there within ``timeout`` seconds."""
        target = self._queued
        self._wake.set()
        with self._idle:
            return self._idle.wait_for(lambda: self._written >= target, timeout)

    def close(self, timeout: float = CLOSE_SECONDS) -> None:
        """Write what is queued and stop the writer, waiting at most ``timeout`` seconds; a
        writer still stuck then (a hung file system) is left behind and reported."""
        if self._closing:
            return
        self._closing = True
        self._wake.set()
        self._thread.join(timeout)
        if self._thread.is_alive():
            if self.error is None:
                left = self._queued - self._written
                self.error = TimeoutError(f"the log writer was still writing after {timeout:g} s; {left} lines unwritten")
            return  # the stuck thread still owns the descriptor; it is a daemon and goes with the process
        if self.dropped and self.error is None:
            self.error = OSError(f"{self.dropped} lines dropped: writing fell {MAX_PENDING} lines behind")
        os.close(self._fd)
        self._fd = -1
        if not self._joining:
            self._record_closed()

    def _record_closed(self) -> None:
        """Record the closed log's identity, so a later run may append to it; a log that
        is no longer the file this run wrote (replaced meanwhile) is not recorded."""
        try:
            st = os.lstat(self.path)
            if st.st_ino == self._ino:
                ledger.record([(self.path, st, None)])
        except OSError as exc:
            if self.error is None:
                self.error = OSError(f"recording it as asyncbench's own failed ({exc}); a later run will not append to it")


def open_log(path: Path, joining: bool = False) -> tuple[Any, LogFile]:
    """A bound structlog logger writing JSON lines to ``path`` (appending), and its file
    (``joining``: a log the parent process of this engine process has open)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fh = LogFile(path, joining)
    logger = structlog.wrap_logger(
        fh,
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.JSONRenderer(serializer=orjson.dumps),
        ],
        cache_logger_on_first_use=True,
    )
    return logger, fh
