"""The YCSB workload's compiled kernels must equal their pure-Python twins bit for bit.

Hypothesis property tests compare ``workloads.ycsb._kernels`` with ``digest.py_digest``,
``digest.py_fold_bytes``/``py_mix``, ``keys.py_key_names`` and ``codec.py_records``/
``py_value``/``py_splice`` on random inputs (empty and odd-length byte strings, 64-bit edge
tags and keys, damaged records), including the error contract: wrong types raise
TypeError, malformed values ValueError, in both. The twins are themselves pinned to the
workload's definitions (``key_name``, ``encode``/``decode``, YCSB's FNV hash), and a
digest folds every byte it is given.

A missing build fails here rather than skipping.
"""

from __future__ import annotations

import importlib

import pytest
from compiled import require
from hypothesis import given, settings
from hypothesis import strategies as st

from asyncbench.native_build import KERNELS_DISABLE_ENV
from asyncbench.workloads.ycsb import codec, kernels
from asyncbench.workloads.ycsb import digest as digests
from asyncbench.workloads.ycsb.keys import key_name, py_key_names
from asyncbench.workloads.ycsb.record import Values, decode, encode

EXTENSION = "asyncbench.workloads.ycsb._kernels"
c = importlib.import_module(EXTENSION)
M64 = (1 << 64) - 1
PROPS = settings(max_examples=200, deadline=None)
POOL = Values(570123434, 10, 100).pool

words = st.integers(0, M64) | st.sampled_from([0, 1, 2**63 - 1, 2**63, M64])
blobs = st.binary(max_size=300)
keynums = st.integers(0, 2**63 - 1) | st.sampled_from([0, 1, 999, 2**31, 2**63 - 1])
fields = st.lists(st.binary(max_size=40), min_size=1, max_size=12)


def outcome(fn, *args):  # type: ignore[no-untyped-def]
    """A call's value, or its exception type: the two implementations must agree on both."""
    try:
        return "ok", fn(*args)
    except Exception as exc:  # noqa: BLE001 - the type is what is compared
        return "raised", type(exc)


def test_the_compiled_kernels_are_in_use() -> None:
    require("YCSB's compiled kernels", kernels.FALLBACK_REASON, KERNELS_DISABLE_ENV)
    assert kernels.ACCELERATED
    assert kernels.digest is c.digest and kernels.records is c.records


@PROPS
@given(words, blobs)
def test_fold_bytes_equals_its_twin(state: int, data: bytes) -> None:
    assert c.fold_bytes(state, data) == digests.py_fold_bytes(state, data)


@PROPS
@given(words)
def test_mix_equals_its_twin(state: int) -> None:
    assert c.mix(state) == digests.py_mix(state)


@PROPS
@given(words, st.integers(0, 4), st.binary(max_size=40), st.none() | blobs)
def test_digest_equals_its_twin(index: int, kind: int, key: bytes, payload: bytes | None) -> None:
    assert c.digest(index, kind, key, payload) == digests.py_digest(index, kind, key, payload)


@PROPS
@given(st.binary(min_size=1, max_size=200), st.data())
def test_a_digest_folds_every_byte(payload: bytes, data: st.DataObject) -> None:
    """Any one byte changed, dropped or added changes the digest (every byte is in it)."""
    i = data.draw(st.integers(0, len(payload) - 1))
    flipped = payload[:i] + bytes([payload[i] ^ data.draw(st.integers(1, 255))]) + payload[i + 1 :]
    base = c.digest(7, 0, b"user1", payload)
    assert c.digest(7, 0, b"user1", flipped) != base
    assert c.digest(7, 0, b"user1", payload[:-1]) != base
    assert c.digest(7, 0, b"user1", payload + b"\0") != base
    assert c.digest(7, 0, b"user1", None) != c.digest(7, 0, b"user1", b"")


@PROPS
@given(st.lists(keynums, max_size=20), st.booleans(), st.integers(0, 30))
def test_key_names_equal_their_twin_and_key_name(keys: list[int], hashed: bool, pad: int) -> None:
    names = c.key_names(keys, hashed, pad)
    assert names == py_key_names(keys, hashed, pad)
    assert names == [key_name(k, hashed=hashed, zeropadding=pad).encode() for k in keys]


@PROPS
@given(st.lists(words, max_size=8), st.integers(1, 12), st.integers(1, 100))
def test_records_equal_their_twin_and_the_fields(tags: list[int], fieldcount: int, fieldlength: int) -> None:
    built = c.records(POOL, tags, fieldcount, fieldlength)
    assert built == codec.py_records(POOL, tags, fieldcount, fieldlength)
    for tag, record in zip(tags, built, strict=True):
        assert decode(record) == [c.value(POOL, tag, fieldcount, fieldlength, f) for f in range(fieldcount)]


@PROPS
@given(words, st.integers(1, 100), st.integers(0, 20))
def test_value_equals_its_twin(tag: int, fieldlength: int, field: int) -> None:
    assert c.value(POOL, tag, 10, fieldlength, field) == codec.py_value(POOL, tag, 10, fieldlength, field)


@PROPS
@given(fields, st.integers(-1, 13), st.binary(max_size=50))
def test_splice_equals_its_twin(values: list[bytes], field: int, value: bytes) -> None:
    record = encode(values)
    got = outcome(c.splice, record, field, value)
    assert got == outcome(codec.py_splice, record, field, value)
    if 0 <= field < len(values):
        assert decode(got[1]) == [value if i == field else v for i, v in enumerate(values)]


@PROPS
@given(fields, st.data())
def test_splice_refuses_a_damaged_record_as_its_twin(values: list[bytes], data: st.DataObject) -> None:
    record = encode(values)
    cut = data.draw(st.integers(0, len(record) - 1))
    damaged = data.draw(st.sampled_from([record[:cut], record + b"\0" * data.draw(st.integers(1, 5))]))
    assert outcome(c.splice, damaged, 0, b"x")[0] == "raised"
    assert outcome(c.splice, damaged, 0, b"x") == outcome(codec.py_splice, damaged, 0, b"x")


def test_field_record_is_one_field_encoded() -> None:
    record = encode([b"ab", b"", b"cde"])
    assert codec.field_record(record, 2) == encode([b"cde"])
    assert codec.field_record(record, 1) == encode([b""])


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda: c.digest("1", 0, b"k", None), TypeError),
        (lambda: c.digest(1, 0, "key", None), TypeError),
        (lambda: c.digest(1, 0, b"k", "payload"), TypeError),
        (lambda: c.digest(1, 0, b"k"), TypeError),
        (lambda: c.fold_bytes(0, bytearray(b"x")), TypeError),
        (lambda: c.key_names([1.5], True, 1), TypeError),
        (lambda: c.key_names([1], True, -1), ValueError),
        (lambda: c.key_names([1], True, 57), ValueError),
        (lambda: c.key_names([2**63], True, 1), OverflowError),
        (lambda: c.records(POOL[:100], [1], 10, 100), ValueError),
        (lambda: c.records(POOL, [1], -1, 100), ValueError),
        (lambda: c.records(POOL, ["1"], 10, 100), TypeError),
        (lambda: c.splice(b"\x01\x00", 0, b"x"), ValueError),
        (lambda: c.splice(encode([b"a"]), 1, b"x"), ValueError),
    ],
)
def test_bad_arguments_raise(call, error) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error):
        call()
