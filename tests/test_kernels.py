"""The compiled kernels must equal their pure-Python definitions bit for bit.

Property tests compare ``workloads.profile_store._kernels`` with ``py_fold_*`` (checksum.py),
``PyNetRandom`` (dotnet_random.py) and ``py_create_many``/``py_email_many``/
``py_created_at_many`` (profiles.py) on random inputs, including the awkward ones (huge and
negative ints, astral characters, lone surrogates, int32 seed edges), plus the error
contract: wrong types raise TypeError, malformed values ValueError, and nothing leaks.
The kernels take the workload's constants from profiles.py/checksum.py (configure()), and
a missing build is loud: kernels.py reports it and the fallback reproduces the spec.

A missing build fails here rather than skipping: ``sp`` is then None.
"""

from __future__ import annotations

import gc
import importlib
import importlib.util
import json
import os
import re
import sqlite3
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import NamedTuple

import pytest
from compiled import require
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncbench.workloads.profile_store import fold, generate, kernels, profiles
from asyncbench.workloads.profile_store import plan as plan_module
from asyncbench.workloads.profile_store import streams as streams_module
from asyncbench.workloads.profile_store.checksum import (
    OFFSET_BASIS,
    py_fold_ints,
    py_fold_profiles,
    py_fold_str,
)
from asyncbench.workloads.profile_store.dotnet_random import PyNetRandom
from asyncbench.workloads.profile_store.reference import (
    REFERENCE_CHECKSUMS,
    REFERENCE_PROFILES,
    REFERENCE_QUERIES,
)

ROOT = Path(__file__).resolve().parent.parent
EXTENSION = "asyncbench.workloads.profile_store._kernels"
BUILT = importlib.util.find_spec(EXTENSION) is not None
#: the compiled module itself (configured even when ASYNCBENCH_NO_KERNELS keeps kernels.py off it)
sp = importlib.import_module(EXTENSION) if BUILT else None
if sp is not None:
    kernels.configure(sp)

M64 = (1 << 64) - 1
SEED = 570123434
PROPS = settings(max_examples=150, deadline=None)

# --- strategies -------------------------------------------------------------------------

EDGE_INTS = [0, 1, -1, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63), M64, 2**64, -(2**64), 2**200, -(2**200) + 7]
ints = st.integers() | st.sampled_from(EDGE_INTS)
states = st.integers(0, M64) | st.just(OFFSET_BASIS)
SPECIAL_CHARS = ["é", "ß", "Ω", "€", "\uffff", "😀", "\U00010000", "\U0010ffff", "\ud800", "\udfff", "\x00"]
#: every code point, lone surrogates included (legal in a Python str)
any_char = st.characters(exclude_categories=()) | st.sampled_from(SPECIAL_CHARS)
any_text = st.text(any_char, max_size=30)
# Encoded records are split on "|", so their fields must not contain it.
field_char = st.characters(exclude_categories=(), exclude_characters="|") | st.sampled_from(SPECIAL_CHARS)
field_text = st.text(field_char, max_size=30)
utf8_field_text = st.text(
    st.characters(codec="utf-8", exclude_characters="|") | st.sampled_from(SPECIAL_CHARS[:8]), max_size=30
)


def profile_rows(text: st.SearchStrategy[str]) -> st.SearchStrategy[tuple]:
    return st.tuples(ints, text, text, text, ints, ints, ints, text, text)


int32_seeds = st.integers(-(2**31), 2**31 - 1) | st.sampled_from(
    [-(2**31), 0, 2**31 - 1, SEED, 161803398, 161803399]
)
#: the compiled NetRandom takes bounds strictly inside +-2**62 (PyNetRandom takes any int)
RNG_BOUND = 2**62
bounds = (
    st.integers(-(2**31), 2**31)
    | st.integers(-RNG_BOUND + 1, RNG_BOUND - 1)
    | st.sampled_from([0, 1, 2, -RNG_BOUND + 1, RNG_BOUND - 1, -(2**61), 2**61 + 1])
)
rng_ops = st.lists(
    st.one_of(
        st.tuples(st.just("next"), bounds, bounds),
        st.tuples(st.just("next"), st.integers(0, 40), st.integers(0, 40)),
        st.tuples(st.just("int64_list"), st.integers(-2, 12), bounds, bounds),
        st.tuples(st.just("int64_list"), st.integers(0, 5), st.integers(-5, 5), st.integers(-5, 10_001)),
        # the lazy plan streams' skips, worker filters and bucket sizes (streams.py)
        st.tuples(st.just("skip_int64"), st.integers(-2, 30), bounds, bounds),
        st.tuples(st.just("skip"), st.integers(-2, 90)),
        st.tuples(
            st.just("int64_filter"),
            st.integers(-2, 30),
            st.integers(-5, 5),
            st.integers(-5, 10_001),
            st.integers(1, 17),
            st.integers(0, 0),
            st.integers(0, 12),
        ),
        st.tuples(st.just("int64_filter"), st.integers(0, 30), bounds, bounds, st.just(5), st.just(3), st.just(9)),
        st.tuples(st.just("count_mod"), st.integers(-2, 30), st.integers(-5, 5), st.integers(-5, 10_001), st.integers(1, 17)),
        st.tuples(st.just("state")),
    ),
    max_size=40,
)


class ProfileRow(NamedTuple):
    user_id: int
    email: str
    country: str
    status: str
    created_at_ms: int
    last_login_ms: int
    reputation: int
    display_name: str
    bio: str


def encoded_str(p: tuple) -> str:
    return "|".join(str(f) for f in p)


def outcome(fn, *args):
    """A call's value, or its exception type: the two implementations must agree on both."""
    try:
        return "ok", fn(*args)
    except Exception as exc:  # noqa: BLE001 - the type is what is compared
        return "raised", type(exc)


# --- checksum folds ---------------------------------------------------------------------


@PROPS
@given(states, st.lists(ints, max_size=50))
def test_fold_ints_matches_python(state: int, values: list[int]) -> None:
    expected = py_fold_ints(state, values)
    assert sp.fold_ints(state, values) == expected
    assert sp.fold_ints(state, tuple(values)) == expected
    assert sp.fold_ints(state, iter(values)) == expected  # the generic iterator path


def test_fold_ints_edges() -> None:
    # negative and >= 2^64 ints fold as their value mod 2^64
    assert sp.fold_ints(OFFSET_BASIS, [-1]) == sp.fold_ints(OFFSET_BASIS, [M64])
    assert sp.fold_ints(OFFSET_BASIS, [2**64 + 5]) == sp.fold_ints(OFFSET_BASIS, [5])
    assert sp.fold_ints(OFFSET_BASIS, [True, 3]) == py_fold_ints(OFFSET_BASIS, [True, 3])
    # an out-of-range state is taken mod 2^64, and returned untouched when nothing folds
    assert sp.fold_ints(-5, [1]) == py_fold_ints(-5, [1])
    assert sp.fold_ints(2**70, []) == 2**70
    assert sp.fold_ints(1, range(10)) == py_fold_ints(1, range(10))


def text_row(text: str) -> tuple:
    return (0, text, text[:3], text[-3:], 0, 0, 0)


@PROPS
@given(states, any_text)
def test_text_fields_fold_like_python(state: int, text: str) -> None:
    # the compiled folds fold text only inside profiles: one word per UTF-16 code unit
    row = text_row(text)
    assert sp.fold_profiles(state, [row]) == py_fold_profiles(state, [row])


@pytest.mark.parametrize(
    "text", ["", "US", "é", "😀", "\ud83d\ude00", "\ud800", "a\udfffb", "\U0010ffff" * 3]
)
def test_text_fields_fold_code_units(text: str) -> None:
    row = text_row(text)
    assert sp.fold_profiles(OFFSET_BASIS, [row]) == py_fold_profiles(OFFSET_BASIS, [row])


def test_surrogate_pair_equals_astral_char() -> None:
    # UTF-16 code units: an astral char and its explicit surrogate pair fold the same
    assert py_fold_str(7, "😀") == py_fold_str(7, "\ud83d\ude00")
    astral, pair = (0, "😀", "", "", 0, 0, 0), (0, "\ud83d\ude00", "", "", 0, 0, 0)
    assert sp.fold_profiles(7, [astral]) == sp.fold_profiles(7, [pair]) == py_fold_profiles(7, [pair])


RECORD_FORMS = ("tuple", "list", "named", "row7", "bytes", "bytearray", "memoryview", "str", "str7", "bytes7")


def as_record(p: tuple, form: str) -> object:
    if form == "tuple":
        return p
    if form == "list":
        return list(p)
    if form == "named":
        return ProfileRow(*p)
    if form == "row7":
        return p[:7]
    if form == "str":
        return encoded_str(p)
    if form == "str7":
        return encoded_str(p[:7])
    if form == "bytes7":
        return encoded_str(p[:7]).encode()
    data = encoded_str(p).encode()
    return {"bytes": data, "bytearray": bytearray(data), "memoryview": memoryview(data)}[form]


@PROPS
@given(states, st.lists(st.tuples(profile_rows(utf8_field_text), st.sampled_from(RECORD_FORMS)), max_size=12))
def test_fold_profiles_mixed_records_match_python(state: int, items: list) -> None:
    records = [as_record(p, form) for p, form in items]
    assert sp.fold_profiles(state, records) == py_fold_profiles(state, records)
    assert sp.fold_profiles(state, iter(records)) == py_fold_profiles(state, records)


@PROPS
@given(states, st.lists(profile_rows(field_text), max_size=8))
def test_fold_profiles_lone_surrogates_in_rows_and_str_records(state: int, rows: list) -> None:
    records = [r for p in rows for r in (p, encoded_str(p))]
    assert sp.fold_profiles(state, records) == py_fold_profiles(state, records)


@PROPS
@given(states, profile_rows(field_text))
def test_fold_profiles_bytes_agree_on_errors(state: int, p: tuple) -> None:
    # surrogatepass bytes are not UTF-8: both raise UnicodeDecodeError; otherwise equal
    data = encoded_str(p).encode("utf-8", "surrogatepass")
    assert outcome(sp.fold_profiles, state, [data]) == outcome(py_fold_profiles, state, [data])


def test_fold_profiles_generated_profiles_all_forms() -> None:
    ps = profiles.py_create_many(1, 300, SEED)
    for form in RECORD_FORMS:
        records = [as_record(p, form) for p in ps]
        assert sp.fold_profiles(OFFSET_BASIS, records) == py_fold_profiles(OFFSET_BASIS, records), form


def test_fold_profiles_pipe_in_row_fields() -> None:
    # a row is not parsed, so "|" inside its strings is just a character
    row = (5, "a|b@example.com", "U|S", "act|ive", -3, 2**64 + 1, 7, "x", "y")
    assert sp.fold_profiles(1, [row]) == py_fold_profiles(1, [row])


def test_fold_profiles_non_contiguous_memoryview() -> None:
    data = encoded_str(profiles.py_create(3, SEED)).encode()
    spaced = bytearray(len(data) * 2)
    spaced[::2] = data
    view = memoryview(spaced)[::2]
    assert not view.contiguous
    assert sp.fold_profiles(9, [view]) == py_fold_profiles(9, [view])


def test_fold_profiles_sqlite_rows() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE p (uid, email, country, status, created, login, rep, display, bio)")
    ps = profiles.py_create_many(1, 50, SEED) + [(-9, "ünï@exämple.com", "DE", "active", -1, 0, 5, "d", "b")]
    conn.executemany("INSERT INTO p VALUES (?,?,?,?,?,?,?,?,?)", ps)
    plain = conn.execute("SELECT * FROM p ORDER BY rowid").fetchall()
    conn.row_factory = sqlite3.Row
    rows = conn.execute("SELECT * FROM p ORDER BY rowid").fetchall()
    conn.close()
    expected = py_fold_profiles(OFFSET_BASIS, ps)
    assert sp.fold_profiles(OFFSET_BASIS, plain) == expected
    assert sp.fold_profiles(OFFSET_BASIS, rows) == expected  # __getitem__ path


def test_fold_profiles_row_shrinking_while_folded_is_an_error_not_a_crash() -> None:
    row: list = [None, "e", "US", "active", 1, 2, 3]

    class Shrinks:
        def __index__(self) -> int:
            del row[1:]
            return 5

    row[0] = Shrinks()
    with pytest.raises(ValueError, match="1 fields"):
        sp.fold_profiles(OFFSET_BASIS, [row])


def test_fold_profiles_tuple_subclass_overriding_getitem() -> None:
    class Reversed(tuple):
        def __getitem__(self, i):
            return tuple.__getitem__(self, len(self) - 1 - i)

    p = profiles.py_create(11, SEED)
    row = Reversed(p[::-1])
    assert sp.fold_profiles(3, [row]) == py_fold_profiles(3, [row]) == py_fold_profiles(3, [p])


@pytest.mark.parametrize(
    "field",
    [
        "+5",
        "-0",
        " 7",
        "7\t",
        "1_000",
        "\u0663",
        "\uff11\uff12",
        "\u00a05",
        "9" * 19,
        "9" * 20,
        "-" + "7" * 40,
    ],
)
def test_fold_profiles_int_fields_parse_like_python_int(field: str) -> None:
    # fields int() accepts beyond plain decimal go through int() itself, so they agree too
    text = f"{field}|e|US|active|{field}|{field}|{field}|d|b"
    for record in (text, text.encode(), bytearray(text.encode())):
        assert sp.fold_profiles(5, [record]) == py_fold_profiles(5, [record])


MALFORMED = [
    b"",
    b"1|a|b",
    b"1|a|b|c|1|2",
    b"x|a|b|c|1|2|3",
    b"1|a|b|c|1.5|2|3",
    b"1|a|b|c|1|2|",
    b"-|a|b|c|1|2|3",
    b"1|a|b|c|1|2|0x10",
    b"1|a|b|c|1|2|1__0",
    b"1|a|b|c|1|2|" + b"9" * 5000,
    b"1|\xff|b|c|1|2|3",
    b"1|a|b|c|1|2|3|\xe2\x82",
    b"1|a|b|c|1|2|3|ok|\xed\xa0\x80",
    b"\xc0\x80|a|b|c|1|2|3",
    b"1|\xf4\x90\x80\x80|b|c|1|2|3",
    b"12|\xe2\x82|b|c|1|2|3",
]


def _decodes(data: bytes) -> bool:
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return True


MALFORMED_CASES = [
    (record, form)
    for record in MALFORMED
    for form in ("bytes", "bytearray", "memoryview", "str")
    if form != "str" or _decodes(record)
]


@pytest.mark.parametrize(("record", "form"), MALFORMED_CASES, ids=lambda v: repr(v)[:40])
def test_fold_profiles_malformed_records_raise_value_error(record: bytes, form: str) -> None:
    rec = {
        "bytes": lambda: record,
        "bytearray": lambda: bytearray(record),
        "memoryview": lambda: memoryview(record),
        "str": lambda: record.decode(),
    }[form]()
    with pytest.raises(ValueError) as c_err:
        sp.fold_profiles(OFFSET_BASIS, [rec])
    with pytest.raises((ValueError, IndexError)) as py_err:
        py_fold_profiles(OFFSET_BASIS, [rec])
    if isinstance(py_err.value, UnicodeDecodeError):
        # same error as bytes.decode(): type, position and reason
        assert type(c_err.value) is UnicodeDecodeError
        assert str(c_err.value) == str(py_err.value)


@pytest.mark.parametrize(
    ("call", "exc"),
    [
        (lambda: sp.fold_ints(OFFSET_BASIS, [1.5]), TypeError),
        (lambda: sp.fold_ints(OFFSET_BASIS, ["1"]), TypeError),
        (lambda: sp.fold_ints(OFFSET_BASIS, 5), TypeError),
        (lambda: sp.fold_ints(1.0, [1]), TypeError),
        (lambda: sp.fold_ints(OFFSET_BASIS), TypeError),
        (lambda: sp.fold_ints(OFFSET_BASIS, [1], 2), TypeError),
        (lambda: sp.fold_ints(OFFSET_BASIS, vals=[1]), TypeError),
        (lambda: sp.fold_ints(OFFSET_BASIS, [1], state=2), TypeError),
        (lambda: sp.fold_profiles(OFFSET_BASIS, [None]), TypeError),
        (lambda: sp.fold_profiles(OFFSET_BASIS, [5]), TypeError),
        (lambda: sp.fold_profiles(OFFSET_BASIS, [(1, b"e", "US", "active", 1, 2, 3)]), TypeError),
        (lambda: sp.fold_profiles(OFFSET_BASIS, [("1", "e", "US", "active", 1, 2, 3)]), TypeError),
        (lambda: sp.fold_profiles(OFFSET_BASIS, [(1, "e", "US", "active", 1.0, 2, 3)]), TypeError),
        (lambda: sp.fold_profiles(OFFSET_BASIS, [(1, "e", "US")]), ValueError),
        (lambda: sp.fold_profiles(OFFSET_BASIS, [[1, "e", "US", "active", 1, 2]]), ValueError),
        (lambda: sp.fold_profiles(OFFSET_BASIS, None), TypeError),
        (lambda: sp.NetRandom("1"), TypeError),
        (lambda: sp.NetRandom(1.5), TypeError),
        (lambda: sp.NetRandom(2**31), ValueError),
        (lambda: sp.NetRandom(-(2**31) - 1), ValueError),
        (lambda: sp.NetRandom(2**80), ValueError),
        (lambda: sp.NetRandom(seed=1), TypeError),
        (lambda: sp.NetRandom(1).next(1), TypeError),
        (lambda: sp.NetRandom(1).next(lo=0, hi=5), TypeError),
        (lambda: sp.NetRandom(1).next(0.5, 3), TypeError),
        (lambda: sp.NetRandom(1).next(0, 2**62), ValueError),
        (lambda: sp.NetRandom(1).next(-(2**62), 0), ValueError),
        (lambda: sp.NetRandom(1).int64_list(1.5, 0, 10), TypeError),
        (lambda: sp.NetRandom(1).int64_list(3, -(2**63), 2**63 - 1), ValueError),
        (lambda: sp.create_many("a", 1, 0), TypeError),
        (lambda: sp.create_many(1, 1, -1), ValueError),
        (lambda: sp.create_many(1, 1, 2**32), ValueError),
        (lambda: sp.create_many(9 * 10**15, 2, 0), ValueError),
        (lambda: sp.create_many(-(9 * 10**15) - 1, 1, 0), ValueError),
        (lambda: sp.create_many(2**64, 1, 0), ValueError),
        (lambda: sp.create_many(1, 1), TypeError),
        (lambda: sp.create_many(start=1, count=1, seed_word=0), TypeError),
    ],
)
def test_wrong_input_raises(call, exc) -> None:
    with pytest.raises(exc):
        call()


def test_python_twin_rejects_the_same_seeds() -> None:
    for seed in (2**31, -(2**31) - 1):
        with pytest.raises(ValueError):
            PyNetRandom(seed)


# --- NetRandom --------------------------------------------------------------------------


def test_known_dotnet_values() -> None:
    # new System.Random(0).Next() and new System.Random(42).Next() under .NET Framework: the
    # Python definition; the compiled generator is held to it below
    for seed, first in ((0, [1559595546, 1755192844, 1649316166]), (42, [1434747710, 302596119, 269548474])):
        r = PyNetRandom(seed)
        assert [round(r.sample() * 2147483647) for _ in range(3)] == first


@PROPS
@given(int32_seeds, rng_ops)
def test_netrandom_matches_python(seed: int, ops: list[tuple]) -> None:
    c, py = sp.NetRandom(seed), PyNetRandom(seed)
    for name, *args in ops:
        assert getattr(c, name)(*args) == getattr(py, name)(*args), (name, args)
    # still in lockstep afterwards, and a copy is an independent twin
    twin_c, twin_py = c.copy(), py.copy()
    assert c.int64_list(20, 1, 10_001) == py.int64_list(20, 1, 10_001)
    assert twin_c.state() == twin_py.state() != c.state()
    assert twin_c.int64_list(20, 1, 10_001) == twin_py.int64_list(20, 1, 10_001)
    assert twin_c.state() == c.state() == py.state()


@pytest.mark.parametrize("seed", [-(2**31), -(2**31) + 1, -1, 0, 1, 161803398, 161803399, 2**31 - 1, SEED])
def test_netrandom_long_sequences(seed: int) -> None:
    c, py = sp.NetRandom(seed), PyNetRandom(seed)
    assert [c.next(0, 32) for _ in range(500)] == [py.next(0, 32) for _ in range(500)]
    assert c.int64_list(2000, 1, 2_000_001) == py.int64_list(2000, 1, 2_000_001)
    assert c.int64_list(200, -(2**62) + 1, 2**62 - 1) == py.int64_list(200, -(2**62) + 1, 2**62 - 1)
    assert [c.next(-(2**62) + 1, 2**62 - 1) for _ in range(50)] == [
        py.next(-(2**62) + 1, 2**62 - 1) for _ in range(50)
    ]


BOUND_EDGES = [-(2**62) - 1, -(2**62), -(2**62) + 1, 0, 2**62 - 1, 2**62, 2**62 + 1, -(2**63), 2**63 - 1]


@pytest.mark.parametrize("lo", BOUND_EDGES)
@pytest.mark.parametrize("hi", BOUND_EDGES)
def test_netrandom_bounds_at_the_edge_of_its_range(lo: int, hi: int) -> None:
    c, py = sp.NetRandom(SEED), PyNetRandom(SEED)
    if abs(lo) < 2**62 and abs(hi) < 2**62:
        for _ in range(5):
            assert c.next(lo, hi) == py.next(lo, hi)
            assert c.int64_list(3, lo, hi) == py.int64_list(3, lo, hi)
    else:  # a clear error, and nothing drawn
        with pytest.raises(ValueError, match="2\\*\\*62"):
            c.next(lo, hi)
        with pytest.raises(ValueError, match="2\\*\\*62"):
            c.int64_list(3, lo, hi)
        assert c.int64_list(5, 0, 1000) == py.int64_list(5, 0, 1000)


def test_netrandom_trivial_ranges_draw_nothing() -> None:
    c, py = sp.NetRandom(SEED), PyNetRandom(SEED)
    # hi - lo <= 1 returns lo and draws nothing
    assert (
        c.int64_list(1, 4, 5) == [4] and c.int64_list(1, 9, 2) == [9] and c.int64_list(3, 7, 7) == [7, 7, 7]
    )
    assert c.int64_list(-3, 0, 100) == [] and c.int64_list(0, 0, 100) == []
    assert c.int64_list(10, 0, 100) == py.int64_list(10, 0, 100)


def test_plan_from_compiled_kernels_equals_plan_from_python(monkeypatch: pytest.MonkeyPatch) -> None:
    counts = plan_module.Counts.for_profiles(3000, queries=700, post_queries=700)

    def every_stream() -> dict[str, list]:
        plan = plan_module.draw_plan(counts, SEED)
        return {name: list(plan.stream(name)) for name in plan_module.STREAM_SIZES}

    monkeypatch.setattr(plan_module, "NetRandom", sp.NetRandom)
    monkeypatch.setattr(streams_module, "created_at_many", sp.created_at_many)
    monkeypatch.setattr(streams_module, "email_many", sp.email_many)
    fast = every_stream()
    monkeypatch.setattr(plan_module, "NetRandom", PyNetRandom)
    monkeypatch.setattr(streams_module, "created_at_many", profiles.py_created_at_many)
    monkeypatch.setattr(streams_module, "email_many", profiles.py_email_many)
    slow = every_stream()
    assert fast == slow


# --- profiles ---------------------------------------------------------------------------


@PROPS
@given(
    st.integers(-(10**6), 10**13) | st.sampled_from([0, -1, 9 * 10**15 - 40, -(9 * 10**15)]),
    st.integers(-3, 40),
    int32_seeds,
)
def test_create_many_matches_python(start: int, count: int, seed: int) -> None:
    expected = profiles.py_create_many(start, count, seed)
    assert sp.create_many(start, count, seed & 0xFFFFFFFF) == expected


def test_create_many_through_profiles_module() -> None:
    assert generate.create_many(1, 2000, SEED) == profiles.py_create_many(1, 2000, SEED)
    assert generate.create(77, -3) == profiles.py_create(77, -3)


@PROPS
@given(st.lists(st.integers(-(2**63), 2**63 - 1) | st.integers(-(10**6), 10**7), max_size=40))
def test_email_many_matches_python(uids: list[int]) -> None:
    assert sp.email_many(uids) == profiles.py_email_many(uids) == [profiles.email_of(u) for u in uids]
    assert sp.email_many(tuple(uids)) == sp.email_many(iter(uids))


@PROPS
@given(st.lists(st.integers(-(9 * 10**15), 9 * 10**15) | st.integers(0, 3 * 10**6), max_size=40), int32_seeds)
def test_created_at_many_matches_python(uids: list[int], seed: int) -> None:
    expected = [profiles.created_at_of(u, seed) for u in uids]
    assert profiles.py_created_at_many(uids, seed) == expected
    assert sp.created_at_many(uids, seed & 0xFFFFFFFF) == expected
    assert sp.created_at_many(iter(uids), seed & 0xFFFFFFFF) == expected


@pytest.mark.parametrize(
    ("call", "exc"),
    [
        (lambda: sp.email_many([2**63]), ValueError),
        (lambda: sp.email_many([1.0]), TypeError),
        (lambda: sp.email_many(5), TypeError),
        (lambda: sp.created_at_many([9 * 10**15 + 1], 0), ValueError),
        (lambda: sp.created_at_many(["1"], 0), TypeError),
        (lambda: sp.created_at_many([1], -1), ValueError),
        (lambda: sp.created_at_many([1], 2**32), ValueError),
    ],
)
def test_plan_helpers_reject_bad_input(call, exc) -> None:
    with pytest.raises(exc):
        call()


# --- the spec's own numbers, computed with the C pieces alone --------------------------


def test_reference_checksums_from_c_pieces_alone() -> None:
    """Phases that need no engine: insert, and the two read phases on fresh profiles."""
    word = SEED & 0xFFFFFFFF
    n = REFERENCE_PROFILES
    rng = sp.NetRandom(SEED)
    reads = rng.int64_list(n, 1, n + 1)
    email_reads = sp.email_many(rng.int64_list(n, 1, n + 1))
    everyone = sp.create_many(1, n, word)
    by_email = {p[1]: p for p in everyone}
    assert (
        f"{sp.fold_ints(OFFSET_BASIS, [p[0] for p in everyone]):016X}"
        == REFERENCE_CHECKSUMS["insert profiles"]
    )
    read = [everyone[u - 1] for u in reads]
    for records in (read, [profiles.encode(p) for p in read]):
        assert f"{sp.fold_profiles(OFFSET_BASIS, records):016X}" == REFERENCE_CHECKSUMS["read by user id"]
    looked_up = [by_email[e] for e in email_reads]
    assert f"{sp.fold_profiles(OFFSET_BASIS, looked_up):016X}" == REFERENCE_CHECKSUMS["lookup by email"]
    # the created-at phase's plan bounds, drawn after the country/status queries
    counts = plan_module.Counts.for_profiles(n, queries=REFERENCE_QUERIES, post_queries=REFERENCE_QUERIES)
    plan = plan_module.draw_plan(counts, SEED)
    assert (reads, email_reads) == (list(plan.stream("reads")), list(plan.stream("email_reads")))
    for _ in range(REFERENCE_QUERIES):  # skip past the country/status queries
        rng.next(0, 32)
        rng.next(0, 4)
    sids = rng.int64_list(REFERENCE_QUERIES, 1, max(2, n - 5000))
    ends = [min(n, s + 5000) for s in sids]
    assert (
        list(zip(sp.created_at_many(sids, word), sp.created_at_many(ends, word), strict=True))
        == plan.stream("ranges")[:]
    )


# --- reference counts and leaks ---------------------------------------------------------


def test_no_reference_leaks() -> None:
    ps = profiles.py_create_many(1, 20, SEED)
    encoded = [profiles.encode(p) for p in ps]
    not_a_str = bytearray(b"email as bytes")  # a wrong-typed field owned by this test
    bad = [b"1|a", b"1|\xff|b|c|1|2|3", b"1|a|b|c|x|2|3", "1|a|b|c|1|2|x", (1, "e", "US")]
    bad += [(1, not_a_str, "US", "active", 1, 2, 3), [1, "e", "US", "active", not_a_str, 2, 3], None]
    # objects only this test holds (small ints and interned strings are shared process-wide)
    owned = (*ps, *encoded, ps[0][1], ps[0][7], ps[0][8], not_a_str)
    before = [sys.getrefcount(o) for o in owned]

    def churn() -> None:
        for _ in range(300):
            sp.fold_profiles(OFFSET_BASIS, ps)
            sp.fold_profiles(OFFSET_BASIS, encoded)
            sp.fold_profiles(OFFSET_BASIS, [memoryview(e) for e in encoded])
            sp.fold_ints(OFFSET_BASIS, [2**70, -1, 5])
            sp.create_many(1, 10, 5)
            sp.email_many(range(-5, 5))
            sp.created_at_many(range(-5, 5), 9)
            r = sp.NetRandom(7)
            r.int64_list(10, -(2**61), 2**61)
            r.next(-(10**18), 10**18)
            for b in bad:
                with pytest.raises((TypeError, ValueError)):
                    sp.fold_profiles(OFFSET_BASIS, [b])
            with pytest.raises(ValueError):
                r.next(0, 2**65)
            with pytest.raises(ValueError):
                r.int64_list(3, -(2**70), 0)
            with pytest.raises(ValueError):
                sp.email_many([1, 2, 2**64])

    churn()  # warm caches and free lists
    tracemalloc.start()
    churn()  # objects that replace pre-tracing ones (caches, free lists) count once here
    gc.collect()
    start = tracemalloc.get_traced_memory()[0]
    churn()  # a leak grows with every round
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - start
    tracemalloc.stop()
    assert grown < 32 * 1024, f"{grown} bytes not freed"
    assert [sys.getrefcount(o) for o in owned] == before


# --- constants come from profiles.py / checksum.py --------------------------------------


def test_compiled_kernels_take_the_python_constants(monkeypatch: pytest.MonkeyPatch) -> None:
    """Other constants in the Python modules, handed over by kernels.configure(), change what
    the compiled kernels compute exactly as they change the Python definitions."""
    word = SEED & 0xFFFFFFFF
    uids = list(range(1, 300))
    default = sp.create_many(1, 500, word)
    default_fold = sp.fold_profiles(OFFSET_BASIS, default)
    default_created = sp.created_at_many(uids, word)
    try:
        monkeypatch.setattr(profiles, "COUNTRIES", [c.lower() for c in reversed(profiles.COUNTRIES)])
        monkeypatch.setattr(profiles, "STATUSES", ("on", "off", "gone", "new"))
        monkeypatch.setattr(profiles, "TOPICS", ("a", "bb", "ccc", "dddd", "e" * 128))
        monkeypatch.setattr(profiles, "BASE_MS", 10**15)
        monkeypatch.setattr(profiles, "LAST_LOGIN_SPAN_MS", 12_345)
        monkeypatch.setattr(profiles, "GOLDEN", 0x0123456789ABCDEF)
        monkeypatch.setattr(fold, "PRIME", 0x100000001B3 + 2)
        kernels.configure(sp)
        ps = sp.create_many(1, 500, word)
        assert ps == profiles.py_create_many(1, 500, SEED)
        for field in (2, 3, 4, 5, 6, 8):  # all that the constants shape (not uid, email, display name)
            assert [p[field] for p in ps] != [p[field] for p in default], field
        assert sp.created_at_many(uids, word) == profiles.py_created_at_many(uids, word) != default_created
        encoded = [profiles.encode(p) for p in ps]
        assert (
            sp.fold_profiles(OFFSET_BASIS, default) == py_fold_profiles(OFFSET_BASIS, default) != default_fold
        )
        assert sp.fold_profiles(OFFSET_BASIS, encoded) == py_fold_profiles(OFFSET_BASIS, encoded)
        assert sp.fold_ints(OFFSET_BASIS, uids) == py_fold_ints(OFFSET_BASIS, uids)
    finally:
        monkeypatch.undo()
        kernels.configure(sp)
    assert sp.create_many(1, 500, word) == default


@pytest.mark.parametrize(
    "change",
    [
        {"countries": ["US"] * 31},
        {"statuses": ("a", "b", "c")},
        {"statuses": ("a", "b", "c", 4)},
        {"topics": ("a", "b", "c", "d", "é")},
        {"topics": ("a", "b", "c", "d", "x" * 129)},
        {"base_ms": -1},
        {"last_login_span_ms": 0},
    ],
)
def test_configure_rejects_constants_the_kernels_cannot_use(change: dict) -> None:
    args = {
        "countries": profiles.COUNTRIES,
        "statuses": profiles.STATUSES,
        "topics": profiles.TOPICS,
        "base_ms": profiles.BASE_MS,
        "last_login_span_ms": profiles.LAST_LOGIN_SPAN_MS,
        "golden": profiles.GOLDEN,
        "prime": fold.PRIME,
    } | change
    try:
        with pytest.raises(ValueError):
            sp.configure(*args.values())
    finally:
        kernels.configure(sp)
    assert sp.create_many(1, 100, 5) == profiles.py_create_many(1, 100, 5)


# --- one import point, loud when missing ------------------------------------------------


def run_python(code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_compiled_kernels_are_built() -> None:
    """A missing build fails the suite (reinstall with a C compiler) instead of skipping."""
    assert BUILT, "compiled kernels not built: reinstall with a C compiler: pip install -e ."
    if os.environ.get(kernels.DISABLE_ENV, "") in ("", "0"):
        kernels.require()
        assert kernels.ACCELERATED and kernels.FALLBACK_REASON is None
        assert kernels.status_line() == "compiled C kernels"
        assert kernels.fold_profiles is sp.fold_profiles and kernels.NetRandom is sp.NetRandom


@pytest.mark.parametrize("first", ["kernels", "checksum", "fold", "generate", "profiles", "plan", "dotnet_random"])
def test_any_module_can_be_imported_first(first: str) -> None:
    # kernels.py imports fold.py/profiles.py, checksum.py/generate.py import kernels.py: every order works
    require("the compiled kernels", kernels.FALLBACK_REASON, kernels.DISABLE_ENV)  # it asserts they are in use
    code = (
        f"import asyncbench.workloads.profile_store.{first}\n"
        "from asyncbench.workloads.profile_store import checksum, generate, kernels, plan, profiles\n"
        "assert generate.create_many(1, 3, 5) == profiles.py_create_many(1, 3, 5)\n"
        "assert kernels.ACCELERATED is True\n"
        "assert plan.NetRandom is kernels.NetRandom\n"
    )
    done = run_python(code)
    assert done.returncode == 0, done.stderr


def test_an_unconfigured_extension_refuses_to_fold() -> None:
    code = (
        "from asyncbench.workloads.profile_store import _kernels\n"
        "try:\n    _kernels.fold_ints(1, [2])\nexcept RuntimeError as e:\n    print(e)\n"
    )
    done = run_python(code)
    assert done.returncode == 0, done.stderr
    assert "configure() was not called" in done.stdout


def test_only_kernels_py_imports_the_extension() -> None:
    """No other module reaches for the extension (nor catches its ImportError)."""
    offenders = []
    for path in [
        *ROOT.glob("asyncbench/**/*.py"),
        *ROOT.glob("engines/**/*.py"),
        *ROOT.glob("workloads/**/*.py"),
    ]:
        text = path.read_text(encoding="utf-8")
        if path.name != "kernels.py" and re.search(r"\b_kernels\b|_speedups", text):
            offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


BLOCKED_RUN = r"""
import importlib.abc, json, sys, tempfile
from pathlib import Path

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "asyncbench.workloads.profile_store._kernels":
            raise ImportError("simulated: the C extension was not built")
        return None

sys.meta_path.insert(0, Block())
from asyncbench.workloads.profile_store import checksum, kernels, plan, profiles
from asyncbench.workloads.profile_store.dotnet_random import PyNetRandom
facts = {
    "accelerated": kernels.ACCELERATED,
    "reason": kernels.FALLBACK_REASON,
    "status": kernels.status_line(),
    "extension_loaded": "asyncbench.workloads.profile_store._kernels" in sys.modules,
    "python_everywhere": kernels.fold_profiles is checksum.py_fold_profiles
    and kernels.fold_ints is checksum.py_fold_ints
    and kernels.create_many is profiles.py_create_many
    and plan.NetRandom is PyNetRandom,
}
try:
    kernels.require()
except RuntimeError as exc:
    facts["require"] = str(exc)
from asyncbench.cli.main import main
out = Path(tempfile.mkdtemp())
code = main(["benchmarks/reference.toml", "--engine", "memory", "--no-isolate", "--no-progress",
             "--output", str(out / "out"), "--data", str(out / "data")])
(result,) = [json.loads(p.read_text()) for p in (out / "out").glob("profiles-*/asyncbench-*.json")]
(engine,) = result["engines"]
facts["exit"] = code
facts["checksums"] = {p["name"]: p["checksum"] for p in engine["phases"] if p["checksum"]}
print("FACTS" + json.dumps(facts))
"""


def test_missing_extension_falls_back_loudly_and_still_matches_the_spec() -> None:
    """The extension's import fails: the pure-Python fallback says so and reproduces the
    spec's 17 reference checksums through the real runner (memory engine)."""
    done = run_python(BLOCKED_RUN, ASYNCBENCH_NO_KERNELS="")
    assert done.returncode == 0, done.stderr[-3000:]
    facts = json.loads(done.stdout.split("FACTS", 1)[1])
    assert facts["accelerated"] is False
    assert facts["reason"] == "ImportError: simulated: the C extension was not built"
    assert facts["status"] == (
        "pure-Python fallback (slower: timings are not comparable): "
        "ImportError: simulated: the C extension was not built"
    )
    assert facts["require"] == (
        "compiled kernels not built: ImportError: simulated: the C extension was not built; "
        "reinstall with a C compiler: pip install -e ."
    )
    assert not facts["extension_loaded"] and facts["python_everywhere"]
    assert facts["exit"] == 0
    assert facts["checksums"] == REFERENCE_CHECKSUMS


def test_env_var_forces_the_fallback() -> None:
    code = (
        "import json\n"
        "from asyncbench.workloads.profile_store import checksum, generate, kernels, profiles\n"
        "print(json.dumps([kernels.ACCELERATED, kernels.FALLBACK_REASON, kernels.status_line(),\n"
        "    kernels.fold_profiles is checksum.py_fold_profiles, generate.create(3, 9) == profiles.py_create(3, 9)]))\n"
    )
    done = run_python(code, ASYNCBENCH_NO_KERNELS="1")
    assert done.returncode == 0, done.stderr
    accelerated, reason, status, python_fold, same = json.loads(done.stdout)
    assert (accelerated, reason, python_fold, same) == (
        False,
        "disabled by ASYNCBENCH_NO_KERNELS=1",
        True,
        True,
    )
    assert status.startswith("pure-Python fallback (slower: timings are not comparable): ")
