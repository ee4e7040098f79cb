"""An operation's 64-bit digest, defined in pure Python: one fold over the bytes as returned.

The digest of operation ``index`` of ``kind`` on key ``key`` folds, with the profile
store's FNV-style word fold (:mod:`asyncbench.workloads.profile_store.fold`), the index,
the kind, the key's bytes and the payload's bytes (what the operation read, in the
canonical record encoding, or a marker word for nothing), each byte string as its length
then its little-endian 8-byte words (the last zero padded), and finishes with murmur3's
``fmix64`` so every input bit reaches every output bit. One pass over the value bytes an
engine returned: nothing is decoded or re-encoded.

These ``py_*`` are the definitions the compiled kernels (the C source beside them) are tested against
and their fallback; :mod:`.kernels` picks one or the other.
"""

from __future__ import annotations

from asyncbench.workloads.profile_store.fold import M64, OFFSET_BASIS, PRIME

#: the length word of "nothing was read" (no byte string is 2**64 - 1 bytes long)
NOTHING = M64


def py_fold_bytes(state: int, data: bytes) -> int:
    """Fold ``len(data)``, then each little-endian 8-byte word of ``data`` (last zero padded)."""
    state = ((state ^ len(data)) * PRIME) & M64
    for i in range(0, len(data), 8):
        state = ((state ^ int.from_bytes(data[i : i + 8], "little")) * PRIME) & M64
    return state


def py_mix(h: int) -> int:
    """murmur3's fmix64."""
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & M64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & M64
    return h ^ (h >> 33)


def py_digest(index: int, kind: int, key: bytes, payload: bytes | None) -> int:
    """The digest of operation ``index`` of ``kind`` on ``key`` that read ``payload``."""
    state = ((OFFSET_BASIS ^ (index & M64)) * PRIME) & M64
    state = ((state ^ (kind & M64)) * PRIME) & M64
    state = py_fold_bytes(state, key)
    state = ((state ^ NOTHING) * PRIME) & M64 if payload is None else py_fold_bytes(state, payload)
    return py_mix(state)
