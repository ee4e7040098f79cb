"""YCSB's key names and FNV hash bit for bit, and the seeded usertable record and its encoding."""

from __future__ import annotations

import numpy as np
import pytest

from asyncbench.workloads.common.fnv import fnvhash64, fnvhash64_array
from asyncbench.workloads.ycsb.keys import key_name
from asyncbench.workloads.ycsb.record import Values, decode, encode, field_names

#: Utils.fnvhash64 computed by YCSB's Java code (java 17, run on this machine with the
#: method copied verbatim), for the inputs on the left
JAVA_FNV = {
    0: 6284781860667377211,
    1: 8517097267634966620,
    2: 1820151046732198393,
    999: 2071219101098386137,
    1000: 5952875239596136740,
    123456789: 2350796791908741607,
    9999999999: 3605131173811637474,
    -1: 8289690350564177859,
}


def test_fnvhash64_is_ycsbs() -> None:
    assert {v: fnvhash64(v) for v in JAVA_FNV} == JAVA_FNV
    vec = fnvhash64_array(np.array(list(JAVA_FNV), dtype=np.int64))
    assert [int(h) for h in vec] == list(JAVA_FNV.values())


def test_key_names_as_build_key_name() -> None:
    assert key_name(0) == "user6284781860667377211"
    assert key_name(5, hashed=False) == "user5"
    assert key_name(5, hashed=False, zeropadding=8) == "user00000005"  # YCSB's javadoc example
    assert key_name(123456789, hashed=False, zeropadding=3) == "user123456789"  # padding never cuts
    assert key_name(1, zeropadding=25) == "user000000" + str(JAVA_FNV[1])


def test_values_are_fixed_by_the_seed() -> None:
    a, b = Values(7, 10, 100), Values(7, 10, 100)
    assert a.record(42) == b.record(42)
    assert Values(8, 10, 100).record(42) != a.record(42)
    record = a.record(42)
    assert len(record) == 10 and all(len(v) == 100 for v in record)
    assert len(set(record)) == 10  # fields differ
    assert a.record(43) != record
    assert all(32 <= c <= 126 for v in record for c in v)  # printable, as YCSB's RandomByteIterator


def test_records_in_bulk_are_the_single_ones() -> None:
    values = Values(7, 5, 12)
    tags = [0, 1, 2**40 + 3, 2**64 - 1]
    assert values.encoded(tags) == [encode(values.record(t)) for t in tags]


def test_field_names() -> None:
    assert field_names(3) == ["field0", "field1", "field2"]


def test_encoding_round_trips_and_refuses_damage() -> None:
    record = Values(1, 4, 9).record(3)
    data = encode(record)
    assert decode(data) == record
    assert decode(encode([])) == []
    assert decode(encode([b"", b"x"])) == [b"", b"x"]
    with pytest.raises(ValueError, match="truncated"):
        decode(data[:-1])
    with pytest.raises(ValueError, match="after its 4 fields"):
        decode(data + b"\0")
    with pytest.raises(ValueError, match="shorter than its header"):
        decode(b"\0")


@pytest.mark.parametrize("fieldcount, fieldlength", [(0, 100), (10, 0)])
def test_zero_fields_or_length_refused(fieldcount: int, fieldlength: int) -> None:
    with pytest.raises(ValueError, match="must be >= 1"):
        Values(1, fieldcount, fieldlength)
