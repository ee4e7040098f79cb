"""Lazy plan streams: a stream's items are drawn batch by batch as its phase consumes them.

A stream is the generator's state where the stream starts, a count and a :class:`Source`
(how one item is drawn and what it becomes). Nothing is held but that state (about 500
bytes), so the harness's memory does not grow with the profile count: the eager plan held
every stream up front (173 MiB at 2_000_000 profiles, 1.6 GiB at 10_000_000), all of it
counted in each engine's peak memory.

:class:`LazyStream` is a ``Sequence``: ``len``, slices and iteration give the same items,
in the same order, as the eagerly drawn stream did. A slice is drawn on demand and
returned as a list; consecutive slices (a phase's batches) continue from a cursor, so a
pass over a stream draws each item once, and a slice elsewhere re-positions the cursor
with a skip pass (``skip_int64`` in the compiled kernels: no Python objects). Workers take
a stream without materialising it: :meth:`LazyStream.window` is a contiguous partition
(a stream of its own, starting where the partition starts), :meth:`LazyStream.by_residue`
the ``uid % P`` update buckets (each bucket draws the whole stream and keeps its share,
in the compiled ``int64_filter``; one counting pass sizes the buckets).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol, overload

from .kernels import created_at_many, email_many
from .profiles import COUNTRIES, STATUSES

__all__ = [
    "CHUNK",
    "SKIP_CHUNK",
    "IdSource",
    "LazyStream",
    "QuerySource",
    "RangeSource",
    "Source",
    "EmailSource",
]

#: Items drawn at a time when a stream is iterated (bounded memory, few calls).
CHUNK = 8192
#: Draws skipped or tallied per kernel call (~50 ms compiled): the kernel holds the GIL, so
#: a long skip pass is cut into calls between which signal handlers (Ctrl-C) run.
SKIP_CHUNK = 1 << 20


class Rng(Protocol):
    """What a stream needs of ``kernels.NetRandom`` (compiled or ``PyNetRandom``)."""

    def copy(self) -> Rng: ...
    def next(self, lo: int, hi: int) -> int: ...
    def skip(self, count: int) -> None: ...
    def int64_list(self, count: int, lo: int, hi: int) -> list[int]: ...
    def skip_int64(self, count: int, lo: int, hi: int) -> None: ...
    def int64_filter(
        self, count: int, lo: int, hi: int, mod: int, rem: int, want: int
    ) -> tuple[list[int], int]: ...
    def count_mod(self, count: int, lo: int, hi: int, mod: int) -> list[int]: ...


class Source:
    """How a stream's items are drawn: ``count`` draws, skipped or kept, and what they become."""

    #: Filtering by ``v % P`` (the update buckets) applies to sources of int64 draws only.
    int64_bounds: tuple[int, int] | None = None

    def skip(self, rng: Rng, count: int) -> None:
        raise NotImplementedError

    def draw(self, rng: Rng, count: int) -> list[Any]:
        raise NotImplementedError

    def items(self, drawn: list[Any]) -> list[Any]:
        """The stream's items from ``draw``'s values (the identity by default)."""
        return drawn


class IdSource(Source):
    """User ids: NextInt64(lo, hi) each (reads, updates, ...)."""

    def __init__(self, lo: int, hi: int) -> None:
        self.lo, self.hi = lo, hi
        self.int64_bounds = (lo, hi)

    def skip(self, rng: Rng, count: int) -> None:
        for done in range(0, count, SKIP_CHUNK):
            rng.skip_int64(min(SKIP_CHUNK, count - done), self.lo, self.hi)

    def draw(self, rng: Rng, count: int) -> list[int]:
        return rng.int64_list(count, self.lo, self.hi)


class EmailSource(IdSource):
    """The email of a drawn user id (email_reads, post_email_reads)."""

    def items(self, drawn: list[int]) -> list[str]:
        return email_many(drawn)


class RangeSource(IdSource):
    """A created-at range: a start id ``s`` drawn in [1, max(2, n - 5000)), the item
    ``(created_at(s), created_at(min(n, s + 5000)))`` (the plan's ``ranges``)."""

    def __init__(self, profiles: int, seed_word: int) -> None:
        super().__init__(1, max(2, profiles - 5000))
        self.profiles, self.word = profiles, seed_word

    def items(self, drawn: list[int]) -> list[tuple[int, int]]:
        n = self.profiles
        lows = created_at_many(drawn, self.word)
        highs = created_at_many([min(n, s + 5000) for s in drawn], self.word)
        return list(zip(lows, highs, strict=True))


class QuerySource(Source):
    """A (country, status) pair: Next(0, 32), then Next(0, 4) (queries, post_queries)."""

    def skip(self, rng: Rng, count: int) -> None:
        for done in range(0, 2 * count, SKIP_CHUNK):
            rng.skip(min(SKIP_CHUNK, 2 * count - done))

    def draw(self, rng: Rng, count: int) -> list[tuple[str, str]]:
        nxt = rng.next
        out = []
        for _ in range(count):
            country = COUNTRIES[nxt(0, 32)]
            out.append((country, STATUSES[nxt(0, 4)]))
        return out


class LazyStream(Sequence[Any]):
    """``count`` draws of ``source`` from generator state ``start`` (which it never advances),
    or, with ``residue = (P, r)``, those of them whose drawn id has ``id % P == r``.

    Not thread-safe: one consumer at a time (a phase's worker on the event loop). Iteration
    uses its own generator copy, so it does not disturb the slicing cursor.
    """

    __slots__ = ("_source", "_start", "_draws", "_len", "_residue", "_rng", "_pos", "_made")

    def __init__(
        self,
        source: Source,
        start: Rng,
        draws: int,
        residue: tuple[int, int] | None = None,
        length: int | None = None,
    ) -> None:
        if residue is not None and (source.int64_bounds is None or length is None):
            raise ValueError("a residue filter needs a source of int64 draws and the filtered length")
        self._source, self._start, self._draws, self._residue = source, start, draws, residue
        self._len = draws if length is None else length
        self._rng: Rng | None = None  # the cursor: generator state at item _pos, _made draws in
        self._pos = self._made = 0

    def __len__(self) -> int:
        return self._len

    def __repr__(self) -> str:
        shape = "" if self._residue is None else f", residue {self._residue[1]} mod {self._residue[0]}"
        return f"<LazyStream of {self._len:_d} {type(self._source).__name__} items{shape}>"

    # --- the cursor --------------------------------------------------------------------

    def _seek(self, pos: int) -> Rng:
        """The generator positioned at item ``pos`` (re-started from the stream's start if
        ``pos`` lies behind the cursor)."""
        if self._rng is None or pos < self._pos:
            self._rng, self._pos, self._made = self._start.copy(), 0, 0
        rng = self._rng
        if pos > self._pos:
            self._made += self._advance(rng, pos - self._pos)
            self._pos = pos
        return rng

    def _advance(self, rng: Rng, count: int) -> int:
        """Skips ``count`` items; returns the draws that took."""
        if self._residue is None:
            self._source.skip(rng, count)
            return count
        made = 0
        for done in range(0, count, SKIP_CHUNK):
            made += self._filtered(rng, min(SKIP_CHUNK, count - done), self._made + made)[1]
        return made

    def _filtered(self, rng: Rng, count: int, made: int | None = None) -> tuple[list[int], int]:
        """The next ``count`` items of this residue, and the draws that took (``made``:
        draws already made from the stream's start; the cursor's by default)."""
        assert self._residue is not None and self._source.int64_bounds is not None
        lo, hi = self._source.int64_bounds
        mod, rem = self._residue
        return rng.int64_filter(self._draws - (self._made if made is None else made), lo, hi, mod, rem, count)

    def _take(self, start: int, stop: int) -> list[Any]:
        rng = self._seek(start)
        count = stop - start
        if self._residue is None:
            drawn = self._source.draw(rng, count)
            self._made += count
        else:
            drawn, made = self._filtered(rng, count)
            self._made += made
        self._pos = stop
        return self._source.items(drawn)

    # --- Sequence ----------------------------------------------------------------------

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...
    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._len)
            if step != 1:
                return self[start:stop][::step] if step > 0 else self[stop + 1 : start + 1][::step]
            return self._take(start, stop) if stop > start else []
        i = index.__index__()
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError("stream index out of range")
        return self._take(i, i + 1)[0]

    def __iter__(self) -> Iterator[Any]:
        twin = LazyStream(self._source, self._start, self._draws, self._residue, self._len)
        for start in range(0, self._len, CHUNK):
            yield from twin._take(start, min(self._len, start + CHUNK))

    # --- partitions for workers --------------------------------------------------------

    def window(self, start: int, stop: int) -> LazyStream:
        """Items ``start .. stop - 1`` as a stream of their own (a worker's contiguous
        partition); costs a skip pass from the cursor, nothing is drawn into memory."""
        start, stop, _ = slice(start, stop).indices(self._len)
        stop = max(start, stop)
        rng = self._seek(start)
        return LazyStream(self._source, rng.copy(), self._draws - self._made, self._residue, stop - start)

    def by_residue(self, workers: int) -> list[LazyStream]:
        """The ``id % workers`` buckets, each in stream order: one counting pass sizes them,
        then each bucket draws the stream itself and keeps its share."""
        if self._residue is not None or self._source.int64_bounds is None:
            raise ValueError("only an unfiltered stream of ids splits by residue")
        lo, hi = self._source.int64_bounds
        rng, sizes = self._start.copy(), [0] * workers
        for done in range(0, self._draws, SKIP_CHUNK):
            tally = rng.count_mod(min(SKIP_CHUNK, self._draws - done), lo, hi, workers)
            sizes = [a + b for a, b in zip(sizes, tally, strict=True)]
        return [
            LazyStream(self._source, self._start, self._draws, (workers, r), sizes[r]) for r in range(workers)
        ]
