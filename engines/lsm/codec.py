"""The block codecs of compressed segments: LZ4 (segment format 4) and zlib (format 3).

Why two: zlib level 1 came first (3.2x on the profiles tree's blocks) and decompresses a
3 KB block in about 10 us, which made a compressed point read about 10x a plain one;
LZ4 decompresses the same block in about 1.3 us at 2.3x (``docs/lsm.md``, "LZ4"), which
is what RocksDB compresses with below its base level. A tree past its compression
threshold writes LZ4 where the library is present, zlib otherwise; both stay readable.

Where LZ4 comes from: the system's ``liblz4.so.1`` (LZ4's stable ABI: three functions),
here through ``ctypes`` and in ``csrc/compress.c`` through ``dlopen``, so the Python and the
compiled writer produce the same bytes from the same library and no build needs LZ4's
headers. It is on every Debian-like system (apt, systemd and zstd depend on it). Where
it is missing, ``LZ4_MISSING`` says so, a tree writes zlib, and opening a format-4
segment fails naming the library.
"""

from __future__ import annotations

import ctypes
import zlib
from functools import cache

__all__ = ["LZ4", "LZ4_LIBRARY", "ZLIB", "ZLIB_LEVEL", "CodecError", "lz4_missing", "pack", "unpack"]

LZ4, ZLIB = "lz4", "zlib"
#: The shared library LZ4 is loaded from (its soname since LZ4 r1xx).
LZ4_LIBRARY = "liblz4.so.1"
#: zlib's fastest level: within 6 % of level 6's ratio at a quarter of its time.
ZLIB_LEVEL = 1


class CodecError(ValueError):
    """A stored block that does not decompress to its recorded length."""


@cache
def _lz4() -> ctypes.CDLL | str:
    """The loaded library, or why it could not be loaded."""
    try:
        lib = ctypes.CDLL(LZ4_LIBRARY)
        lib.LZ4_compress_default.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
        lib.LZ4_decompress_safe.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
        lib.LZ4_compressBound.argtypes = [ctypes.c_int]
    except (OSError, AttributeError) as exc:
        return f"{LZ4_LIBRARY} cannot be loaded ({exc})"
    return lib


def lz4_missing() -> str | None:
    """Why LZ4 cannot be used here, or None when it can."""
    lib = _lz4()
    return lib if isinstance(lib, str) else None


def _library() -> ctypes.CDLL:
    lib = _lz4()
    if isinstance(lib, str):
        raise CodecError(f"the block is LZ4 and {lib}")
    return lib


def pack(codec: str, raw: bytes) -> bytes:
    """One block compressed on its own: zlib (``ZLIB_LEVEL``, zlib format) or an LZ4 block
    (``LZ4_compress_default``, as the C writer, ``csrc/writer.c``, calls it)."""
    if codec == ZLIB:
        return zlib.compress(raw, ZLIB_LEVEL)
    lib = _library()
    room = lib.LZ4_compressBound(len(raw))
    out = ctypes.create_string_buffer(room)
    n = lib.LZ4_compress_default(raw, out, len(raw), room)
    if n <= 0:
        raise CodecError(f"LZ4 could not compress a block of {len(raw)} bytes")
    return out.raw[:n]


def unpack(codec: str, stored: bytes, size: int) -> bytes:
    """A block's stored bytes decompressed; ``CodecError`` unless they decompress to
    exactly ``size`` bytes (the length the segment's index records)."""
    if codec == ZLIB:
        try:
            plain = zlib.decompress(stored, bufsize=max(1, size))
        except zlib.error as exc:
            raise CodecError(f"does not decompress ({exc})") from None
    else:
        lib = _library()
        out = ctypes.create_string_buffer(max(1, size))
        n = lib.LZ4_decompress_safe(stored, out, len(stored), size)
        if n < 0:
            raise CodecError("does not decompress (LZ4)")
        plain = out.raw[:n]
    if len(plain) != size:
        raise CodecError(f"decompresses to {len(plain)} bytes, not {size}")
    return plain
