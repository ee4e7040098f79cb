"""Stop signals for the whole life of a run, and the event-loop backend the run uses.

The first SIGINT, SIGTERM or SIGHUP starts a graceful stop: the engine under way is
cancelled, its store closed, and the partial report written. Every later signal is
absorbed with a line saying so, so a second Ctrl-C or a second SIGTERM 50 ms after the
first can no longer kill the run halfway through closing a store or writing a report; a
third SIGINT (Ctrl-C three times) forces an immediate exit, code 130, after printing
where the partial files are. SIGHUP also points the terminal's descriptors at /dev/null,
since the terminal it names is gone and writing to it would fail.

The handlers are plain ``signal.signal`` handlers, installed once before anything runs
and never removed, so there is no window (between the event loop's own handlers and
ours, or while the report is written) in which a signal takes its default action. While
the event loop runs, the first signal cancels the run's scope through
``loop.call_soon_threadsafe``, which is safe from a handler. Before the loop runs there is
nothing to cancel: synchronous start-up work that can take minutes (an engine child's skip
pass through billions of draws) runs inside :meth:`StopSignals.raising`, where the first
signal raises :class:`StopRequested` between two of its kernel calls instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import stat
from collections.abc import Callable, Iterator
from typing import Any

import anyio

__all__ = ["FORCE_AFTER_SIGINTS", "STOP_SIGNALS", "StopRequested", "StopSignals", "backend_options"]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: The SIGINT that forces an exit instead of waiting for the graceful stop.
FORCE_AFTER_SIGINTS = 3
EXIT_INTERRUPTED = 130


class StopRequested(BaseException):
    """The first stop signal, raised inside :meth:`StopSignals.raising` (a BaseException,
    as KeyboardInterrupt: no ``except Exception`` in the interrupted work may swallow it)."""


class StopSignals:
    """The process's stop policy: record the first signal, absorb the rest, force on the
    third Ctrl-C. ``interrupted`` is ``"interrupted by SIGTERM"`` (etc.) once stopped."""

    def __init__(self, stopping: str = "closing the engine's store and writing the partial report") -> None:
        #: What the first signal starts, as its line says it (the floor's differs from a run's).
        self.stopping = stopping
        self.interrupted: str | None = None
        self.received = 0
        self._sigints = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._scope: anyio.CancelScope | None = None
        #: The files written so far, printed on a forced exit.
        self.partial_files: Callable[[], list[str]] = list
        #: Last-moment cleanups of a forced exit (kill engine children, remove temp dirs).
        self.on_force: list[Callable[[], None]] = []
        self._previous: dict[int, Any] = {}
        #: Say nothing: an engine child, whose parent speaks for both (Ctrl-C reaches the
        #: whole process group, and the parent then sends the child a SIGTERM too).
        self.quiet = False
        self._raising = False

    def install(self) -> None:
        for sig in STOP_SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handler)

    def restore(self) -> None:
        """Put back the handlers :meth:`install` replaced (when the program is done, or
        for a caller such as a test that runs the CLI in its own process)."""
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    def _handler(self, signum: int, frame: Any) -> None:
        self.handle(signum)

    def handle(self, signum: int) -> None:
        name = signal.Signals(signum).name
        self.received += 1
        if signum == signal.SIGHUP:
            _detach_from_terminal()
        if signum == signal.SIGINT:
            self._sigints += 1
        if self.interrupted is None:
            self.interrupted = f"interrupted by {name}"
            self._say(f"\nasyncbench: {name}: stopping; {self.stopping} (Ctrl-C three times forces an exit)")
            self._cancel()
            if self._raising:
                self._raising = False  # once: the caller's clean-up runs undisturbed
                raise StopRequested(self.interrupted)
        elif signum == signal.SIGINT and self._sigints >= FORCE_AFTER_SIGINTS:
            self.force_exit(name)
        else:
            self._say(f"asyncbench: {name}: already stopping ({self.interrupted}); signal absorbed")

    @contextlib.contextmanager
    def raising(self) -> Iterator[None]:
        """Synchronous work in the main thread, before any event loop, that a stop must cut
        short: inside, the first stop signal (or one that already came) raises
        :class:`StopRequested`. Handlers run between bytecodes, so work in C must come in
        calls of bounded length (the skip pass: ~50 ms each). Without this, an engine child
        stopped during a skip pass of minutes drew on until its parent killed it 60 s later."""
        if self.interrupted is not None:
            raise StopRequested(self.interrupted)
        self._raising = True
        try:
            yield
        finally:
            self._raising = False

    def _say(self, text: str) -> None:
        if not self.quiet:
            _say(text)

    def _cancel(self) -> None:
        loop, scope = self._loop, self._scope
        if loop is not None and scope is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(scope.cancel)

    def force_exit(self, name: str) -> None:
        """Leave now: run the registered cleanups, say where the partial files are, exit 130."""
        for cleanup in self.on_force:
            with contextlib.suppress(Exception):
                cleanup()
        files = []
        with contextlib.suppress(Exception):
            files = self.partial_files()
        where = "; ".join(files) if files else "none written yet"
        self._say(f"asyncbench: {name} again: forced exit without finishing the report; partial files: {where}")
        _kill_children()
        os._exit(EXIT_INTERRUPTED)

    async def watch(self, scope: anyio.CancelScope) -> None:
        """While the run's event loop runs: the first stop signal cancels ``scope``."""
        self._loop, self._scope = asyncio.get_running_loop(), scope
        try:
            if self.interrupted is not None:  # a signal arrived before the loop started
                scope.cancel()
            await anyio.sleep_forever()
        finally:
            self._loop = self._scope = None


def _kill_children() -> None:
    """SIGKILL every process this one started (and theirs), so none outlives a forced exit:
    the registered cleanups kill the engine children they know, but a child being started
    at that moment (between the fork and ``open_process`` returning) is known to none
    (issue 52: a process was still alive 1 s after the forced exit)."""
    with contextlib.suppress(Exception):  # leaving now matters more than any one child
        import psutil

        for child in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.Error):
                child.kill()


def _say(text: str) -> None:
    """One line on stderr, written with os.write: a handler may interrupt a print() in
    progress, and a buffered stream must not be entered twice."""
    with contextlib.suppress(OSError):  # the terminal may be gone
        os.write(2, (text + "\n").encode(errors="backslashreplace"))


def _detach_from_terminal() -> None:
    """The terminal hung up: point stdin/stdout/stderr that were terminals at /dev/null."""
    try:
        null = os.open(os.devnull, os.O_RDWR)
    except OSError:
        return
    try:
        for fd in (0, 1, 2):
            with contextlib.suppress(OSError):
                if stat.S_ISCHR(os.fstat(fd).st_mode):
                    os.dup2(null, fd)
    finally:
        os.close(null)


def backend_options() -> dict[str, Any]:
    """uvloop where it is installed, else asyncio's own loop."""
    try:
        import uvloop

        return {"loop_factory": uvloop.new_event_loop}
    except ImportError:
        return {}
