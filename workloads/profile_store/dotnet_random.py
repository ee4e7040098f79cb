"""Pure-Python twin of .NET's legacy seeded ``System.Random`` (Net5CompatSeedImpl).

The reference benchmark draws its operation plan from this generator, so the
plan (and every checksum) only matches when this is bit-exact. The plan draws through
``workloads.profile_store.kernels.NetRandom``: the compiled twin of ``next`` and
``int64_list`` when built, this class otherwise.
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
