"""Write-ahead log: one file per memtable generation, framed and checksummed.

File: ``wal-{seq:08d}.log`` = b"LSMWAL01" then frames::

    u32 payload length | u32 crc32(payload) | u8 kind (0 raw, 1 zlib) | payload

A payload is a run of records ``u32 key length | u32 value length (0xFFFFFFFF =
tombstone) | key | value``. Replay reads frames in order and stops at the first one
that is short or fails its checksum (a torn tail after a crash), truncating the file
there: a crash can lose the tail, never corrupt what precedes it, and what survives is a
prefix of the writes.

Modes: ``none`` (no log; only flushed segments persist), ``sync`` (one frame written and
fsynced per write, before the write is acknowledged) and ``async-compressed`` (records
are queued in memory and a background writer packs them into zlib frames; frames are
written in order, so a crash keeps a prefix of the acknowledged writes; the writer
fsyncs about once a second, settle and close fsync everything).
"""

from __future__ import annotations

import os
import struct
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

MODES = ("none", "sync", "async-compressed")
MAGIC = b"LSMWAL01"
_FRAME = struct.Struct("<IIB")
_REC = struct.Struct("<II")
_TOMB = 0xFFFFFFFF
#: The background writer fsyncs a log at most this long after its last fsync.
ASYNC_FSYNC_INTERVAL_S = 1.0
#: Queued records past which an append writes inline (no writer task got a turn).
INLINE_FLUSH_RECORDS = 200_000


def wal_path(directory: Path, seq: int) -> Path:
    return directory / f"wal-{seq:08d}.log"


def encode_records(records: list[tuple[bytes, bytes | None]]) -> bytes:
    pack = _REC.pack
    parts: list[bytes] = []
    add = parts.append
    for k, v in records:
        if v is None:
            add(pack(len(k), _TOMB))
            add(k)
        else:
            add(pack(len(k), len(v)))
            add(k)
            add(v)
    return b"".join(parts)


def decode_records(payload: bytes) -> Iterator[tuple[bytes, bytes | None]]:
    pos = 0
    end = len(payload)
    unpack = _REC.unpack_from
    while pos < end:
        klen, vlen = unpack(payload, pos)
        pos += 8
        k = payload[pos : pos + klen]
        pos += klen
        if vlen == _TOMB:
            yield k, None
        else:
            yield k, payload[pos : pos + vlen]
            pos += vlen


def frame(payload: bytes, compress: bool) -> bytes:
    if compress:
        payload = zlib.compress(payload, 1)
    return _FRAME.pack(len(payload), zlib.crc32(payload), 1 if compress else 0) + payload


def replay_file(path: Path) -> Iterator[tuple[bytes, bytes | None]]:
    """Records of one log file up to its first torn/corrupt frame (which is cut off)."""
    data = path.read_bytes()
    if data[:8] != MAGIC:
        good = 0
        if len(data) >= 8:  # not a log this engine wrote
            raise ValueError(f"{path}: not a write-ahead log")
    else:
        pos = good = 8
        while pos + _FRAME.size <= len(data):
            length, crc, kind = _FRAME.unpack_from(data, pos)
            start = pos + _FRAME.size
            payload = data[start : start + length]
            if len(payload) != length or zlib.crc32(payload) != crc or kind > 1:
                break
            if kind == 1:
                try:
                    payload = zlib.decompress(payload)
                except zlib.error:
                    break
            yield from decode_records(payload)
            pos = good = start + length
    if good != len(data):
        with open(path, "r+b") as f:
            f.truncate(good)
            if good == 0:
                f.write(MAGIC)


class _LogFile:
    __slots__ = ("seq", "path", "fd", "retired", "lock", "synced")

    def __init__(self, directory: Path, seq: int) -> None:
        self.seq = seq
        self.path = wal_path(directory, seq)
        self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        if os.fstat(self.fd).st_size == 0:
            os.write(self.fd, MAGIC)
        self.retired = False
        #: Held while a worker thread writes, so a file is never closed mid-write.
        self.lock = threading.Lock()
        self.synced = time.monotonic()

    def close(self) -> None:
        with self.lock:
            if self.fd >= 0:
                os.close(self.fd)
                self.fd = -1


class WriteAheadLog:
    """The log of one tree. ``append`` is the hot path; ``rotate`` starts the file of a
    new memtable; ``retire`` deletes files whose memtable reached disk."""

    def __init__(self, directory: Path, mode: str, seq: int) -> None:
        if mode not in MODES:
            raise ValueError(f"wal_mode must be one of {MODES}, not {mode!r}")
        self.dir = Path(directory)
        self.mode = mode
        self.seq = seq
        self.pending: list[tuple[bytes, bytes | None]] = []
        #: (file, records) batches waiting for the writer, oldest first.
        self.queue: list[tuple[_LogFile, list[tuple[bytes, bytes | None]]]] = []
        self.files: dict[int, _LogFile] = {}
        self.current: _LogFile | None = None
        if mode != "none":
            self.current = self.files[seq] = _LogFile(self.dir, seq)
        self.append = self._bind_append()

    def _bind_append(self):  # type: ignore[no-untyped-def]
        if self.mode == "none":
            return _noop
        if self.mode == "sync":
            return self._append_sync
        return self._append_async

    def _append_sync(self, key: bytes, value: bytes | None) -> None:
        fd = self.current.fd  # type: ignore[union-attr]
        os.write(fd, frame(encode_records([(key, value)]), False))
        os.fsync(fd)

    def _append_async(self, key: bytes, value: bytes | None) -> None:
        pending = self.pending
        pending.append((key, value))
        if len(pending) >= INLINE_FLUSH_RECORDS:
            self.write_now()

    # --- writer side ----------------------------------------------------------------
    def has_work(self) -> bool:
        return bool(self.pending or self.queue)

    def take(self, limit: int = 1 << 62) -> tuple[_LogFile, list[tuple[bytes, bytes | None]]] | None:
        """The oldest queued records (at most ``limit``) and their file, or None. Taken
        records must be written before anything taken later."""
        if self.queue:
            log, records = self.queue[0]
            if len(records) <= limit:
                del self.queue[0]
                return log, records
            self.queue[0] = (log, records[limit:])
            return log, records[:limit]
        if self.pending:
            records = self.pending
            if len(records) <= limit:
                self.pending = []
                return self.current, records  # type: ignore[return-value]
            self.pending = records[limit:]
            return self.current, records[:limit]  # type: ignore[return-value]
        return None

    @staticmethod
    def write_batch(log: _LogFile, payload: bytes) -> None:
        """Compress and append one frame (runs in a worker thread; zlib drops the GIL)."""
        data = frame(payload, True)
        with log.lock:
            if log.retired or log.fd < 0:
                return
            os.write(log.fd, data)
            now = time.monotonic()
            if now - log.synced >= ASYNC_FSYNC_INTERVAL_S:
                os.fsync(log.fd)
                log.synced = now

    def write_now(self) -> None:
        """Write every queued record inline (close, overflow without a writer turn)."""
        while True:
            batch = self.take()
            if batch is None:
                return
            self.write_batch(batch[0], encode_records(batch[1]))

    # --- lifecycle ------------------------------------------------------------------
    def rotate(self) -> int:
        """Start the next file; queued records of the old one keep their order."""
        self.seq += 1
        if self.mode == "none":
            return self.seq
        if self.pending:
            self.queue.append((self.current, self.pending))  # type: ignore[arg-type]
            self.pending = []
        self.current = self.files[self.seq] = _LogFile(self.dir, self.seq)
        return self.seq

    def retire(self, seqs: list[int]) -> None:
        """Delete logs whose records are now in a durable segment."""
        for seq in seqs:
            log = self.files.pop(seq, None)
            if log is not None:
                log.retired = True
                log.close()
            wal_path(self.dir, seq).unlink(missing_ok=True)

    def sync(self) -> None:
        for log in list(self.files.values()):
            with log.lock:
                if log.fd >= 0:
                    os.fsync(log.fd)

    def close(self) -> None:
        self.write_now()
        self.sync()
        for log in self.files.values():
            log.close()
        self.files.clear()


def _noop(key: bytes, value: bytes | None) -> None:
    return None
