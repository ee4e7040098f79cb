"""Write-ahead log: framing, replay, torn and corrupt tails, modes, retirement."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

import asyncbench.engines.lsm.wal as wal_module
from asyncbench.engines.lsm.errors import CorruptLog
from asyncbench.engines.lsm.wal import (
    WriteAheadLog,
    decode_records,
    encode_records,
    frame,
    pairs,
    replay_file,
    wal_path,
)

RECORDS = [(b"a", b"1"), (b"b", None), (b"", b""), (b"c" * 70, b"x" * 5000), (b"a", b"2")]


def flat(records: list[tuple[bytes, bytes | None]]) -> list[bytes | None]:
    return [x for r in records for x in r]


def test_record_codec_round_trip() -> None:
    assert list(decode_records(encode_records(flat(RECORDS)))) == RECORDS


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
    assert pairs(batch[1]) == [(b"k", b"v")]
    wal.write_records(*batch)
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
    assert [k for k, _ in pairs(first[1])] == [b"0", b"1", b"2"]
    assert [k for k, _ in pairs(second[1])] == [b"3", b"4"] and second[0].seq == 0
    assert [k for k, _ in pairs(third[1])] == [b"new"] and third[0].seq == 1
    assert wal.take() is None
    wal.close()


def sync_log(path: Path) -> Path:
    wal = WriteAheadLog(path, "sync", 0)
    for k, v in RECORDS:
        wal.append(k, v)
    wal.close()
    return wal_path(path, 0)


@pytest.mark.parametrize("cut", [1, 5, 9, 18])
def test_torn_tail_is_dropped_and_file_truncated_only_when_allowed(tmp_path: Path, cut: int) -> None:
    path = sync_log(tmp_path)
    full = path.read_bytes()
    path.write_bytes(full[:-cut])
    with pytest.raises(CorruptLog) as err:
        list(replay_file(path))
    assert err.value.path == path and 0 < err.value.offset < len(full)  # type: ignore[operator]
    assert path.read_bytes() == full[:-cut]  # untouched until allowed
    got = list(replay_file(path, torn_tail_ok=True))
    assert got == RECORDS[: len(got)] and len(got) == len(RECORDS) - 1
    assert path.stat().st_size == err.value.offset
    assert list(replay_file(path)) == got  # the cut-off tail is gone for good


def test_corrupt_frame_before_the_tail_is_damage_even_after_a_crash(tmp_path: Path) -> None:
    path = sync_log(tmp_path)
    data = bytearray(path.read_bytes())
    second_frame = 8 + 9 + len(encode_records(flat(RECORDS[:1])))
    data[second_frame + 9] ^= 0x55
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptLog) as err:
        list(replay_file(path, torn_tail_ok=True))
    assert err.value.offset == second_frame and "intact frames follow" in str(err.value)
    assert path.read_bytes() == bytes(data)


@pytest.mark.parametrize("content", [b"", b"LSMW"])
def test_log_torn_while_its_header_was_written(tmp_path: Path, content: bytes) -> None:
    path = wal_path(tmp_path, 0)
    path.write_bytes(content)
    with pytest.raises(CorruptLog):
        list(replay_file(path))
    assert list(replay_file(path, torn_tail_ok=True)) == []
    assert path.read_bytes() == b"LSMWAL01"


def test_foreign_file_is_never_a_torn_tail(tmp_path: Path) -> None:
    path = wal_path(tmp_path, 0)
    path.write_bytes(b"something else entirely")
    with pytest.raises(CorruptLog) as err:
        list(replay_file(path, torn_tail_ok=True))
    assert err.value.offset == 0 and "not a write-ahead log" in str(err.value)
    assert path.read_bytes() == b"something else entirely"


def test_checksummed_frame_that_does_not_decode_is_damage(tmp_path: Path) -> None:
    path = wal_path(tmp_path, 0)
    path.write_bytes(b"LSMWAL01" + frame(b"\x05\x00\x00\x00\x01\x00\x00\x00ab", False))
    with pytest.raises(CorruptLog) as err:
        list(replay_file(path, torn_tail_ok=True))
    assert err.value.offset == 8 and "does not decode" in str(err.value)


def test_a_log_is_fsynced_before_the_next_one_gets_frames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[tuple[str, int]] = []
    real_write, real_fsync = os.write, os.fsync
    monkeypatch.setattr(
        wal_module.os, "write", lambda fd, b: events.append(("write", fd)) or real_write(fd, b)
    )
    monkeypatch.setattr(wal_module.os, "fsync", lambda fd: events.append(("fsync", fd)) or real_fsync(fd))
    wal = WriteAheadLog(tmp_path, "async-compressed", 0)
    wal.append(b"a", b"1")
    wal.write_now()
    old = wal.current
    assert old is not None
    wal.rotate()
    wal.append(b"b", b"2")
    events.clear()
    wal.write_now()
    new = wal.current
    assert new is not None
    assert events.index(("fsync", old.fd)) < events.index(("write", new.fd))
    wal.close()


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


def test_a_failed_write_leaves_a_torn_tail_and_nothing_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wal = WriteAheadLog(tmp_path, "async-compressed", 0)
    wal.append(b"a", b"1")
    wal.write_now()
    real_write = os.write
    calls = []

    def disk_fills(fd: int, data: bytes) -> int:
        calls.append(len(data))
        if len(calls) == 1:
            return real_write(fd, bytes(data)[: len(data) // 2])  # a short write, then full
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(wal_module.os, "write", disk_fills)
    wal.append(b"b", b"2" * 100)
    with pytest.raises(OSError):
        wal.write_now()
    monkeypatch.setattr(wal_module.os, "write", real_write)  # space again: still no frame after it
    wal.append(b"c", b"3")
    with pytest.raises(OSError, match="no more writes"):
        wal.write_now()
    assert len(calls) == 2
    path = wal_path(tmp_path, 0)
    assert list(replay_file(path, torn_tail_ok=True)) == [(b"a", b"1")]


def needs_lz4(test: Callable[..., None]) -> Callable[..., None]:
    """The compiled module (run, skipped or failed as tests/compiled.py says) with the
    system's liblz4.so.1 (skipped without it: a library of the machine, not of the build)."""
    no_lz4 = wal_module.native.ACCELERATED and not wal_module.native.LZ4
    marked = pytest.mark.skipif(no_lz4, reason="liblz4.so.1 is not here")(test)
    return pytest.mark.usefixtures("lsm_compiled")(marked)


@needs_lz4
def test_the_writer_writes_lz4_frames_of_exactly_the_encoded_records(tmp_path: Path) -> None:
    """Kind 2: the payload is the records' length, then one LZ4 block of them; replay
    gives back every record, in order."""
    data = wal_module.compressed_frame(flat(RECORDS))
    length, crc, kind = wal_module._FRAME.unpack_from(data)
    payload = data[wal_module._FRAME.size :]
    assert kind == 2 and length == len(payload) and crc == __import__("zlib").crc32(payload)
    raw = encode_records(flat(RECORDS))
    assert wal_module._U32.unpack_from(payload)[0] == len(raw)
    assert wal_module.unpack(wal_module.LZ4, payload[4:], len(raw)) == raw
    wal = WriteAheadLog(tmp_path, "async-compressed", 1)
    for k, v in RECORDS * 200:
        wal.append(k, v)
    wal.close()
    body = wal_path(tmp_path, 1).read_bytes()
    assert body[:8] == wal_module.MAGIC_LZ4 and body[8 + 8] == 2  # the header, the first frame's kind
    assert list(replay_file(wal_path(tmp_path, 1))) == RECORDS * 200
    assert wal_module.native.lz4_log_frame([]) and list(decode_records(b"")) == []


@needs_lz4
@pytest.mark.parametrize("encoder", ["lz4_log_frame", "encode_records"])
def test_bad_records_are_refused_with_the_same_errors(encoder: str) -> None:
    """The records are checked with the GIL released (``records_scan``): a bad one still
    raises the same error, and nothing is written."""
    encode = getattr(wal_module.native, encoder)
    with pytest.raises(TypeError, match="records must be a list"):
        encode((b"k", b"v"))
    with pytest.raises(ValueError, match="even length"):
        encode([b"k"])
    for bad in ([b"k", "v"], ["k", b"v"], [b"a", b"1", b"k", 3]):
        with pytest.raises(TypeError, match="keys must be bytes and values bytes or None"):
            encode(bad)
    assert encode([b"k", None]) and encode([b"k", b"v"])


def test_logs_of_zlib_frames_still_replay(tmp_path: Path) -> None:
    """Logs written before the log went LZ4 (kind 1) and raw frames (kind 0) replay."""
    path = wal_path(tmp_path, 1)
    path.write_bytes(
        b"LSMWAL01" + frame(encode_records(flat(RECORDS[:2])), True) + frame(encode_records(flat(RECORDS[2:])), False)
    )
    assert list(replay_file(path)) == RECORDS


@needs_lz4
def test_a_checksummed_lz4_frame_that_does_not_decompress_is_damage(tmp_path: Path) -> None:
    import zlib

    for payload in (b"\x00\x01", b"\x10\x00\x00\x00" + b"\xff" * 12):  # no length; not LZ4
        path = wal_path(tmp_path, 1)
        path.write_bytes(b"LSMWAL02" + wal_module._FRAME.pack(len(payload), zlib.crc32(payload), 2) + payload)
        with pytest.raises(CorruptLog, match="frame does not decode"):
            list(replay_file(path, torn_tail_ok=True))
        assert path.stat().st_size == 8 + 9 + len(payload)  # nothing was changed


@needs_lz4
def test_an_lz4_frame_in_a_log_of_the_first_header_is_an_unknown_kind(tmp_path: Path) -> None:
    """``LSMWAL01`` logs hold kinds 0 and 1 only, as readers before LZ4 frames expect; kind
    2 frames go only into ``LSMWAL02`` logs, which such readers refuse by their header."""
    path = wal_path(tmp_path, 1)
    path.write_bytes(b"LSMWAL01" + wal_module.compressed_frame(flat(RECORDS)))
    with pytest.raises(CorruptLog, match="unknown frame kind 2"):
        list(replay_file(path))
    path.write_bytes(b"LSMWAL02" + wal_module.compressed_frame(flat(RECORDS)))
    assert list(replay_file(path)) == RECORDS


@pytest.mark.parametrize("mode", ["sync", "async-compressed"])
def test_a_log_keeps_the_header_it_has_and_frames_follow_it(tmp_path: Path, mode: str) -> None:
    """A new log gets ``LSMWAL02`` only where it will hold LZ4 frames; a log that exists
    already (an older header) is appended to in the frames its header allows."""
    lz4 = mode == "async-compressed" and wal_module.native.lz4_log_frame is not None
    wal = WriteAheadLog(tmp_path, mode, 1)
    wal.append(b"a", b"1")
    wal.close()
    assert wal_path(tmp_path, 1).read_bytes()[:8] == (b"LSMWAL02" if lz4 else b"LSMWAL01")
    wal_path(tmp_path, 2).write_bytes(b"LSMWAL01")
    wal = WriteAheadLog(tmp_path, mode, 2)
    wal.append(b"b", b"2")
    wal.close()
    data = wal_path(tmp_path, 2).read_bytes()
    assert data[:8] == b"LSMWAL01" and data[8 + 8] in (0, 1)
    assert list(replay_file(wal_path(tmp_path, 2))) == [(b"b", b"2")]
