"""Write-ahead log: framing, replay, torn and corrupt tails, modes, retirement."""

from __future__ import annotations

from pathlib import Path

import pytest

from engines.lsm.wal import WriteAheadLog, decode_records, encode_records, replay_file, wal_path

RECORDS = [(b"a", b"1"), (b"b", None), (b"", b""), (b"c" * 70, b"x" * 5000), (b"a", b"2")]


def test_record_codec_round_trip() -> None:
    assert list(decode_records(encode_records(RECORDS))) == RECORDS


@pytest.mark.parametrize("mode", ["sync", "async-compressed"])
def test_replay_returns_what_was_appended(tmp_path: Path, mode: str) -> None:
    wal = WriteAheadLog(tmp_path, mode, 3)
    for k, v in RECORDS:
        wal.append(k, v)
    wal.close()
    assert list(replay_file(wal_path(tmp_path, 3))) == RECORDS


def test_async_records_wait_in_memory_until_written(tmp_path: Path) -> None:
    wal = WriteAheadLog(tmp_path, "async-compressed", 0)
    wal.append(b"k", b"v")
    assert list(replay_file(wal_path(tmp_path, 0))) == []
    batch = wal.take()
    assert batch is not None
    wal.write_batch(batch[0], encode_records(batch[1]))
    assert list(replay_file(wal_path(tmp_path, 0))) == [(b"k", b"v")]
    wal.close()


def test_take_respects_limit_and_order_across_rotation(tmp_path: Path) -> None:
    wal = WriteAheadLog(tmp_path, "async-compressed", 0)
    for i in range(5):
        wal.append(b"%d" % i, b"")
    wal.rotate()
    wal.append(b"new", b"")
    first = wal.take(3)
    second = wal.take(3)
    third = wal.take(3)
    assert first is not None and second is not None and third is not None
    assert [k for k, _ in first[1]] == [b"0", b"1", b"2"]
    assert [k for k, _ in second[1]] == [b"3", b"4"] and second[0].seq == 0
    assert [k for k, _ in third[1]] == [b"new"] and third[0].seq == 1
    assert wal.take() is None
    wal.close()


@pytest.mark.parametrize("cut", [1, 5, 9, 18])
def test_torn_tail_is_dropped_and_file_truncated(tmp_path: Path, cut: int) -> None:
    wal = WriteAheadLog(tmp_path, "sync", 0)
    for k, v in RECORDS:
        wal.append(k, v)
    wal.close()
    path = wal_path(tmp_path, 0)
    full = path.read_bytes()
    path.write_bytes(full[:-cut])
    got = list(replay_file(path))
    assert got == RECORDS[: len(got)] and len(got) == len(RECORDS) - 1
    assert list(replay_file(path)) == got  # the cut-off tail is gone for good


def test_corrupt_frame_stops_replay(tmp_path: Path) -> None:
    wal = WriteAheadLog(tmp_path, "sync", 0)
    for k, v in RECORDS:
        wal.append(k, v)
    wal.close()
    path = wal_path(tmp_path, 0)
    data = bytearray(path.read_bytes())
    second_frame_payload = 8 + 9 + len(encode_records(RECORDS[:1])) + 9
    data[second_frame_payload] ^= 0x55
    path.write_bytes(bytes(data))
    assert list(replay_file(path)) == RECORDS[:1]


def test_none_mode_writes_nothing_and_retire_deletes(tmp_path: Path) -> None:
    wal = WriteAheadLog(tmp_path, "none", 0)
    wal.append(b"k", b"v")
    wal.close()
    assert not list(tmp_path.iterdir())
    wal = WriteAheadLog(tmp_path, "sync", 4)
    wal.append(b"k", b"v")
    wal.rotate()
    wal.retire([4])
    assert not wal_path(tmp_path, 4).exists() and wal_path(tmp_path, 5).exists()
    wal.close()


def test_unknown_mode_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        WriteAheadLog(tmp_path, "fast", 0)
