"""Write-ahead log: one file per memtable generation, framed and checksummed.

File: ``wal-{seq:08d}.log`` = b"LSMWAL01" (frames of kinds 0 and 1) or b"LSMWAL02" (any
kind) then frames::

    u32 payload length | u32 crc32(payload) | u8 kind (0 raw, 1 zlib, 2 LZ4) | payload

A payload is a run of records ``u32 key length | u32 value length (0xFFFFFFFF =
tombstone) | key | value``: stored as it is (kind 0), zlib-compressed (1), or as its
u32 length followed by one LZ4 block of it (2); frames are appended whole, in order, so
a crash keeps a prefix of the writes. The background writer writes LZ4 frames where the
compiled module loaded ``liblz4.so.1`` (``native.lz4_log_frame``), in files headed
``LSMWAL02``; zlib frames otherwise, in files headed ``LSMWAL01``. Replay reads both. Why
a second header: a reader from before kind 2 takes an unknown kind at the end of a log
for a torn tail and cuts it off after an unclean stop; a header it does not know it
refuses instead, changing nothing. Why LZ4: the reference harness's engine logs in
LZ4 at its fastest level, and zlib level 1 was most of the log writer's CPU, which at
10M profiles shared the machine's two cores with the merges and the event loop.

Replay tells a torn tail from damage. A frame that is short, fails its checksum or has
an unknown kind is a *torn tail* only if no intact frame follows it in its file, the log
is the last one holding frames, and the tree was not closed cleanly (``meta.json``
records clean closes): then it is what a crash left mid-append, it is dropped and the
file is cut there (durably, so it never reappears mid-log once newer logs get frames).
Anything else is damage: :class:`CorruptLog` names the file and the frame's offset and
nothing is changed, so the user decides. To keep "only the last log can be torn" true
even when the machine loses power, the background writer fsyncs a log before it writes
the first frame of the next one.

Modes: ``none`` (no log; only flushed segments persist), ``sync`` (one frame written and
fsynced per write, before the write is acknowledged) and ``async-compressed`` (records
are queued in memory and a background writer packs them into compressed frames; frames are
written in order, so a crash keeps a prefix of the acknowledged writes; the writer
fsyncs about once a second, settle and close fsync everything).
"""

from __future__ import annotations

import os
import re
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from . import native
from .codec import LZ4, CodecError, unpack
from .errors import CorruptLog

__all__ = [
    "MAGIC",
    "MAGIC_LZ4",
    "MODES",
    "WriteAheadLog",
    "compressed_frame",
    "decode_records",
    "encode_records",
    "encode_records_py",
    "pairs",
    "Records",
    "frame",
    "replay_file",
    "wal_path",
]

MODES = ("none", "sync", "async-compressed")
MAGIC = b"LSMWAL01"
#: The header of a log that may hold LZ4 frames (kind 2).
MAGIC_LZ4 = b"LSMWAL02"
_FRAME = struct.Struct("<IIB")
_REC = struct.Struct("<II")
_U32 = struct.Struct("<I")
_TOMB = 0xFFFFFFFF
#: The background writer fsyncs a log at most this long after its last fsync.
ASYNC_FSYNC_INTERVAL_S = 1.0
#: Queued records past which an append writes inline (no writer task got a turn).
INLINE_FLUSH_RECORDS = 200_000


def wal_path(directory: Path, seq: int) -> Path:
    return directory / f"wal-{seq:08d}.log"


#: A log's records as it keeps them: one flat list, key, value, key, value, ... (value
#: None: a tombstone). Why flat: a (key, value) tuple per record is a tracked container,
#: and the five records an insert logs were most of what set the garbage collector off
#: during inserts (``benchmarks/gc_freeze.py`` counts its collections).
Records = list["bytes | None"]


def pairs(records: Records) -> list[tuple[bytes, bytes | None]]:
    """The flat records as (key, value) tuples (tests, tools)."""
    it = iter(records)
    return list(zip(it, it, strict=True))  # type: ignore[arg-type]


def encode_records_py(records: Records) -> bytes:
    """A frame's payload: per record u32 key length, u32 value length (``_TOMB``: a
    tombstone), key, value. The pure-Python twin of ``native.encode_records``."""
    if len(records) % 2:
        raise ValueError("encode_records: a flat list of key, value pairs has an even length")
    pack = _REC.pack
    parts: list[bytes] = []
    add = parts.append
    it: Iterator[Any] = iter(records)
    for k, v in zip(it, it, strict=True):  # even length checked above
        if v is None:
            add(pack(len(k), _TOMB))
            add(k)
        else:
            add(pack(len(k), len(v)))
            add(k)
            add(v)
    return b"".join(parts)


#: The encoder in use: the compiled one where it is built (one C call per frame instead
#: of a Python loop over 16_384 records on the insert path), else the Python twin.
encode_records: Callable[[Records], bytes] = native.encode_records or encode_records_py
#: How many frame kinds each header allows (kind < n): 0 raw, 1 zlib; 2 LZ4.
_KINDS = {MAGIC: 2, MAGIC_LZ4: 3}


def compressed_frame(records: Records, lz4: bool = True) -> bytes:
    """A whole compressed frame of ``records``: with ``lz4`` (a ``LSMWAL02`` log) and where
    the compiled module has LZ4, kind 2, in one compiled call that releases the GIL while
    it copies and compresses; else zlib (kind 1)."""
    if lz4 and native.lz4_log_frame is not None:
        return native.lz4_log_frame(records)
    return frame(encode_records(records), True)


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
    if pos != end:
        raise ValueError(f"records overrun their payload by {pos - end} bytes")


def frame(payload: bytes, compress: bool) -> bytes:
    if compress:
        payload = zlib.compress(payload, 1)
    return _FRAME.pack(len(payload), zlib.crc32(payload), 1 if compress else 0) + payload


def replay_file(path: Path, torn_tail_ok: bool = False) -> Iterator[tuple[bytes, bytes | None]]:
    """The records of one log, in order (see the module doc for torn tails and damage).

    ``torn_tail_ok``: the caller knows the last session stopped uncleanly and that no
    later log holds frames, so this log's last frame may be torn and is then dropped.
    Otherwise, and for a bad frame that intact frames follow, :class:`CorruptLog`."""
    data = path.read_bytes()
    kinds = _KINDS.get(data[:8])
    if kinds is not None:
        pos = 8
        while pos < len(data):
            payload, reason = _read_frame(data, pos, kinds)
            if payload is None:
                break
            try:  # a valid checksum over a payload that does not decode: never a torn write
                kind = data[pos + 8]
                if kind == 1:
                    payload = zlib.decompress(payload)
                elif kind == 2:
                    if len(payload) < 4:
                        raise ValueError(f"an LZ4 payload of {len(payload)} bytes has no length")
                    payload = unpack(LZ4, payload[4:], _U32.unpack_from(payload)[0])
                records = list(decode_records(payload))
            except (zlib.error, struct.error, ValueError, CodecError) as e:
                raise CorruptLog(path, pos, f"frame does not decode: {e}; nothing was changed") from e
            yield from records
            pos += _FRAME.size + _FRAME.unpack_from(data, pos)[0]
        else:
            return
    elif len(data) < 8 and (MAGIC.startswith(data) or MAGIC_LZ4.startswith(data)):
        pos, reason, kinds = 0, f"header cut short ({len(data)} of 8 bytes)", _KINDS[MAGIC_LZ4]
    else:
        raise CorruptLog(path, 0, "not a write-ahead log (bad magic); nothing was changed")
    if not torn_tail_ok:
        raise CorruptLog(
            path,
            pos,
            f"{reason}; only the last log's last frame may be torn, and only after an "
            "unclean stop (this tree was closed cleanly or a later log holds frames); "
            "nothing was changed",
        )
    if _intact_frame_after(data, pos, kinds):
        raise CorruptLog(
            path,
            pos,
            f"{reason}; intact frames follow it, so it is damage, not a torn tail; nothing was changed",
        )
    with open(path, "r+b") as f:  # drop the torn tail for good
        f.truncate(pos)
        if pos == 0:
            f.write(MAGIC)
        f.flush()
        os.fsync(f.fileno())


def _read_frame(data: bytes, pos: int, kinds: int) -> tuple[bytes | None, str]:
    """(payload as stored, "") of the intact frame at ``pos``, or (None, what is wrong);
    ``kinds``: the frame kinds the log's header allows (kind < kinds)."""
    if pos + _FRAME.size > len(data):
        return None, f"frame header cut short ({len(data) - pos} of {_FRAME.size} bytes)"
    length, crc, kind = _FRAME.unpack_from(data, pos)
    start = pos + _FRAME.size
    end = start + length
    if kind >= kinds:
        return None, f"unknown frame kind {kind}"
    if end > len(data):
        return None, f"frame of {length} bytes runs {end - len(data)} bytes past the end of the file"
    if zlib.crc32(memoryview(data)[start:end]) != crc:
        return None, "frame checksum mismatch"
    return data[start:end], ""


_KIND_BYTE = {2: re.compile(rb"[\x00\x01]"), 3: re.compile(rb"[\x00-\x02]")}


def _intact_frame_after(data: bytes, bad: int, kinds: int) -> bool:
    """Whether an intact frame starts anywhere after offset ``bad`` (then the bad frame
    is not the tail: e.g. its length field was damaged). Candidates are the positions
    whose kind byte is a known kind; the checksum decides. Empty frames are never written, so
    a run of zero bytes (what a lost page reads as) is no frame."""
    n = len(data)
    view = memoryview(data)
    unpack = _FRAME.unpack_from
    for m in _KIND_BYTE[kinds].finditer(data, bad + 1 + 8):
        q = m.start() - 8
        length, crc, _kind = unpack(data, q)
        end = q + _FRAME.size + length
        if length > 0 and end <= n and zlib.crc32(view[q + _FRAME.size : end]) == crc:
            return True
    return False


class _LogFile:
    __slots__ = ("seq", "path", "fd", "retired", "lock", "synced", "broken", "dirty", "lz4")

    def __init__(self, directory: Path, seq: int, magic: bytes = MAGIC) -> None:
        self.seq = seq
        self.path = wal_path(directory, seq)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        if os.fstat(self.fd).st_size == 0:
            os.write(self.fd, magic)
        else:  # (a log that exists already keeps its header: its frames follow it)
            magic = os.pread(self.fd, len(MAGIC), 0)
        #: Whether the header allows LZ4 frames.
        self.lz4 = magic == MAGIC_LZ4
        self.retired = False
        #: Held while a worker thread writes, so a file is never closed mid-write.
        self.lock = threading.Lock()
        self.synced = time.monotonic()
        #: Bytes written since the last fsync (a new file: its header, or unknown).
        self.dirty = True
        #: The error of a failed write: the file may end in a part frame, so nothing may
        #: follow it (a torn frame is tolerated only as the very last one).
        self.broken: BaseException | None = None

    def write(self, data: bytes) -> None:
        """Append ``data`` whole (short writes continue; the caller holds the lock or
        is the only writer)."""
        if self.broken is not None:
            raise OSError(f"{self.path}: no more writes after a failed one") from self.broken
        view = memoryview(data)
        self.dirty = True
        try:
            while view:
                view = view[os.write(self.fd, view) :]
        except BaseException as e:
            self.broken = e
            raise

    def sync(self) -> None:
        """fsync, unless nothing was written since the last one: a settle right after a
        stabilization (every record already fsynced) costs no disk flush."""
        with self.lock:
            if self.fd >= 0 and self.dirty:
                os.fsync(self.fd)
                self.dirty = False

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
        #: Records not yet taken by the writer, flat (``Records``).
        self.pending: Records = []
        #: (file, records) batches waiting for the writer, oldest first.
        self.queue: list[tuple[_LogFile, Records]] = []
        self.files: dict[int, _LogFile] = {}
        self.current: _LogFile | None = None
        #: The newest log that frames were written to (older ones are fsynced first).
        self._frames_seq = seq
        #: Bytes of frames appended since open: the engine's own count of what it logged.
        self.logged = 0
        #: The header of the logs this object creates: ``MAGIC_LZ4`` where its frames will
        #: be LZ4 (the compressed mode, with the compiled LZ4 writer).
        self.magic = MAGIC_LZ4 if mode == "async-compressed" and native.lz4_log_frame is not None else MAGIC
        if mode != "none":
            self.current = self.files[seq] = _LogFile(self.dir, seq, self.magic)
        self.append = self._bind_append()

    def _bind_append(self) -> Callable[[bytes, bytes | None], None]:
        if self.mode == "none":
            return _noop
        if self.mode == "sync":
            return self._append_sync
        return self._append_async

    def _append_sync(self, key: bytes, value: bytes | None) -> None:
        log = self.current
        data = frame(encode_records([key, value]), False)
        log.write(data)  # type: ignore[union-attr]
        self.logged += len(data)
        os.fsync(log.fd)  # type: ignore[union-attr]
        log.dirty = False  # type: ignore[union-attr]

    def _append_async(self, key: bytes, value: bytes | None) -> None:
        pending = self.pending
        pending += (key, value)  # flat: no tuple outlives this line
        if len(pending) >= 2 * INLINE_FLUSH_RECORDS:
            self.write_now()

    # --- writer side ----------------------------------------------------------------
    def has_work(self) -> bool:
        return bool(self.pending or self.queue)

    def backlog(self) -> int:
        """Records queued and not yet taken."""
        return (len(self.pending) + sum(len(records) for _log, records in self.queue)) // 2

    def take(self, limit: int = 1 << 61) -> tuple[_LogFile, Records] | None:
        """The oldest queued records (at most ``limit`` records, flat: twice as many
        items) and their file, or None. Taken records must be written before anything
        taken later."""
        limit *= 2
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

    def write_records(self, log: _LogFile, records: Records) -> None:
        """Encode, compress and append taken records as one frame: the log writer runs
        this in a worker thread, so no per-record work of the log is left on the event
        loop. The first frame of a log waits until the older logs are fsynced, so only
        the newest log with frames can ever end in a torn frame."""
        data = compressed_frame(records, log.lz4)
        if log.seq > self._frames_seq:
            for older in list(self.files.values()):
                if older.seq < log.seq:
                    older.sync()
            self._frames_seq = log.seq
        with log.lock:
            if log.retired or log.fd < 0:
                return
            log.write(data)
            self.logged += len(data)  # (one writer at a time: the tree's log loop, or close)
            now = time.monotonic()
            if now - log.synced >= ASYNC_FSYNC_INTERVAL_S:
                os.fsync(log.fd)
                log.synced = now
                log.dirty = False

    def write_now(self) -> None:
        """Write every queued record inline (close, overflow without a writer turn)."""
        while True:
            batch = self.take()
            if batch is None:
                return
            self.write_records(*batch)

    # --- lifecycle ------------------------------------------------------------------
    def rotate(self) -> int:
        """Start the next file; queued records of the old one keep their order."""
        self.seq += 1
        if self.mode == "none":
            return self.seq
        if self.pending:
            self.queue.append((self.current, self.pending))  # type: ignore[arg-type]
            self.pending = []
        self.current = self.files[self.seq] = _LogFile(self.dir, self.seq, self.magic)
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
            log.sync()

    def close(self) -> None:
        """Write and fsync everything queued; the files are closed even if that fails."""
        try:
            self.write_now()
            self.sync()
        finally:
            for log in self.files.values():
                log.close()
            self.files.clear()


def _noop(key: bytes, value: bytes | None) -> None:
    return None
