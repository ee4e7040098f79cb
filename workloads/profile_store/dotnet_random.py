"""Pure-Python twin of .NET's legacy seeded ``System.Random`` (Net5CompatSeedImpl).

The reference benchmark draws its operation plan from this generator, so the
plan (and every checksum) only matches when this is bit-exact. The plan draws through
``workloads.profile_store.kernels.NetRandom``: the compiled twin of this class when built,
this class otherwise. Besides the draws, the lazy plan streams (``streams.py``) need
``copy`` (a stream's start state), the skips (``skip``, ``skip_int64``), ``int64_filter``
(one worker's ``uid % P`` share of a stream) and ``count_mod`` (the shares' sizes).
"""

from __future__ import annotations

_INT_MAX = 2**31 - 1
_MSEED = 161803398
_INV_INT_MAX = 1.0 / _INT_MAX


class PyNetRandom:
    """Knuth's subtractive generator exactly as .NET seeds and samples it."""

    __slots__ = ("_s", "_inext", "_inextp")

    def __init__(self, seed: int) -> None:
        if not -(2**31) <= seed < 2**31:
            raise ValueError(f"seed {seed} is outside the signed 32-bit range")
        s = [0] * 56
        subtraction = _INT_MAX if seed == -(2**31) else abs(seed)
        mj = _MSEED - subtraction
        s[55] = mj
        mk = 1
        ii = 0
        for _ in range(1, 55):
            ii += 21
            if ii >= 55:
                ii -= 55
            s[ii] = mk
            mk = mj - mk
            if mk < 0:
                mk += _INT_MAX
            mj = s[ii]
        for _ in range(1, 5):
            for i in range(1, 56):
                n = i + 30
                if n >= 55:
                    n -= 55
                # C# int32 arithmetic: the first round can overflow (s[55] starts negative
                # for seeds above 161803398), so wrap to 32 bits before the sign fix-up.
                v = ((s[i] - s[1 + n] + 2**31) & 0xFFFFFFFF) - 2**31
                if v < 0:
                    v += _INT_MAX
                s[i] = v
        self._s = s
        self._inext = 0
        self._inextp = 21

    def _internal_sample(self) -> int:
        i = self._inext + 1
        if i >= 56:
            i = 1
        j = self._inextp + 1
        if j >= 56:
            j = 1
        s = self._s
        r = s[i] - s[j]
        if r == _INT_MAX:
            r -= 1
        if r < 0:
            r += _INT_MAX
        s[i] = r
        self._inext = i
        self._inextp = j
        return r

    def sample(self) -> float:
        return self._internal_sample() * _INV_INT_MAX

    def next(self, lo: int, hi: int) -> int:
        """Next(lo, hi): an int in [lo, hi)."""
        return int(self._internal_sample() * _INV_INT_MAX * (hi - lo)) + lo

    def next_uint64(self) -> int:
        a = int(self._internal_sample() * _INV_INT_MAX * (1 << 22))
        b = int(self._internal_sample() * _INV_INT_MAX * (1 << 22))
        c = int(self._internal_sample() * _INV_INT_MAX * (1 << 20))
        return a | (b << 22) | (c << 44)

    def next_int64(self, lo: int, hi: int) -> int:
        """NextInt64(lo, hi): rejection sampling over the top ``bits`` of NextUInt64."""
        r = hi - lo
        if r <= 1:
            return lo
        shift = 64 - (r - 1).bit_length()
        while True:
            x = self.next_uint64() >> shift
            if x < r:
                return x + lo

    def int64_list(self, count: int, lo: int, hi: int) -> list[int]:
        """``count`` successive NextInt64(lo, hi) draws."""
        return [self.next_int64(lo, hi) for _ in range(count)]

    def skip_int64(self, count: int, lo: int, hi: int) -> None:
        """Advances past ``count`` NextInt64(lo, hi) draws, keeping none."""
        draw = self.next_int64
        for _ in range(count):
            draw(lo, hi)

    def int64_filter(self, count: int, lo: int, hi: int, mod: int, rem: int, want: int) -> tuple[list[int], int]:
        """At most ``count`` NextInt64(lo, hi) draws, keeping each ``v`` with ``v % mod == rem``
        until ``want`` are kept; returns the kept values and the number of draws made."""
        if mod < 1 or not 0 <= rem < mod or want < 0:
            raise ValueError("NetRandom.int64_filter(): needs mod >= 1, 0 <= rem < mod, want >= 0")
        draw = self.next_int64
        kept: list[int] = []
        made = 0
        while made < count and len(kept) < want:
            v = draw(lo, hi)
            made += 1
            if v % mod == rem:
                kept.append(v)
        return kept, made

    def count_mod(self, count: int, lo: int, hi: int, mod: int) -> list[int]:
        """Advances past ``count`` draws; how many had each value of ``v % mod``."""
        if not 1 <= mod <= 1 << 20:
            raise ValueError("NetRandom.count_mod(): mod must be in 1 .. 2**20")
        tally = [0] * mod
        draw = self.next_int64
        for _ in range(count):
            tally[draw(lo, hi) % mod] += 1
        return tally

    def skip(self, count: int) -> None:
        """Advances past ``count`` internal samples (``count`` Next(lo, hi) draws)."""
        sample = self._internal_sample
        for _ in range(count):
            sample()

    def copy(self) -> PyNetRandom:
        """An independent generator in the same state (where a stream starts)."""
        twin = PyNetRandom.__new__(PyNetRandom)
        twin._s = list(self._s)
        twin._inext = self._inext
        twin._inextp = self._inextp
        return twin

    def state(self) -> tuple[int, ...]:
        """``(inext, inextp, *s)``, to compare generators (equal to the compiled one's)."""
        return (self._inext, self._inextp, *self._s)
