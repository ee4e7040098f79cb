"""The profile record: deterministic generator, update rule, stored encoding and index keys.

Everything here follows ``docs/workload.md`` to the bit. A profile is a
plain 9-tuple (cheapest to build, compare and hand to C):
``(user_id, email, country, status, created_at_ms, last_login_ms, reputation, display_name, bio)``.
"""

from __future__ import annotations

from collections.abc import Iterable

Profile = tuple[int, str, str, str, int, int, int, str, str]
#: What a read returns: a profile tuple, or its stored encoding (``bytes``/``str``) which
#: the checksum folds directly without building a tuple.
Record = Profile | bytes | str

UID, EMAIL, COUNTRY, STATUS, CREATED_AT, LAST_LOGIN, REPUTATION, DISPLAY_NAME, BIO = range(9)

M64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
UPDATE_SALT = 0xD1B54A32D192ED03
COUNTRIES = [
    "US",
    "DE",
    "GB",
    "FR",
    "NL",
    "SE",
    "NO",
    "DK",
    "FI",
    "ES",
    "IT",
    "PT",
    "PL",
    "CZ",
    "TR",
    "JP",
    "KR",
    "SG",
    "IN",
    "BR",
    "CA",
    "AU",
    "MX",
    "AR",
    "ZA",
    "IL",
    "IE",
    "CH",
    "AT",
    "BE",
    "RO",
    "GR",
]
STATUSES = ("active", "suspended", "deleted", "pending")
TOPICS = ("storage engines", "distributed systems", "analytics", "developer tools", "backend services")
BASE_MS = 1_672_531_200_000
LAST_LOGIN_SPAN_MS = 90 * 24 * 60 * 60 * 1000
WEEK_MS = 7 * 24 * 60 * 60 * 1000
DAY_MS = 86_400_000
MAX_REPUTATION = 1_000_000
INT63_MAX = 2**63 - 1

_NEXT_STATUS = {s: STATUSES[(i + 1) % 4] for i, s in enumerate(STATUSES)}


def mix(v: int) -> int:
    """splitmix64 finaliser, modulo 2^64."""
    v = (v + GOLDEN) & M64
    v = ((v ^ (v >> 30)) * 0xBF58476D1CE4E5B9) & M64
    v = ((v ^ (v >> 27)) * 0x94D049BB133111EB) & M64
    return v ^ (v >> 31)


def seed_word(seed: int) -> int:
    """The spec's S: the signed 32-bit seed taken as unsigned 32-bit."""
    return seed & 0xFFFFFFFF


def email_of(uid: int) -> str:
    return f"user{uid:012d}@example{uid % 97:02d}.com"


def py_create(uid: int, seed: int) -> Profile:
    s = seed_word(seed)
    a = mix((uid + s) & M64)
    b = mix((a + GOLDEN) & M64)
    return (
        uid,
        f"user{uid:012d}@example{uid % 97:02d}.com",
        COUNTRIES[a % 32],
        STATUSES[(a >> 8) % 4],
        BASE_MS + uid * 1000 + a % 997,
        BASE_MS + b % LAST_LOGIN_SPAN_MS,
        b % 1_000_000,
        f"User {uid:012d}",
        f"Profile {uid} prefers {TOPICS[a % 5]} and has segment {b % 10000:04d}.",
    )


def py_create_many(start: int, count: int, seed: int) -> list[Profile]:
    return [py_create(uid, seed) for uid in range(start, start + count)]


def created_at_of(uid: int, seed: int) -> int:
    a = mix((uid + seed_word(seed)) & M64)
    return BASE_MS + uid * 1000 + a % 997


def update(p: Profile, seed: int) -> Profile:
    """The spec's update rule applied to the current stored profile."""
    uid = p[0]
    m = mix((uid + seed_word(seed) + UPDATE_SALT) & M64)
    status = _NEXT_STATUS[p[3]] if uid % 4 == 0 else p[3]
    rep = p[6] + (m % 501) - 250
    if rep < 0:
        rep = 0
    elif rep > MAX_REPUTATION:
        rep = MAX_REPUTATION
    return (uid, p[1], p[2], status, p[4], p[5] + WEEK_MS + m % DAY_MS, rep, p[7], p[8] + " updated")


# --- stored encoding (key/value engines) -------------------------------------------------


def encode(p: Profile) -> bytes:
    """Value bytes: the nine fields joined with ``|`` (ints in decimal)."""
    return f"{p[0]}|{p[1]}|{p[2]}|{p[3]}|{p[4]}|{p[5]}|{p[6]}|{p[7]}|{p[8]}".encode()


def decode(value: bytes | str) -> Profile:
    if isinstance(value, (bytes, bytearray, memoryview)):
        value = bytes(value).decode()
    f = value.split("|", 8)
    return (int(f[0]), f[1], f[2], f[3], int(f[4]), int(f[5]), int(f[6]), f[7], f[8])


def primary_key(uid: int) -> bytes:
    return b"%020d" % uid


def country_status_key(p: Profile) -> bytes:
    return f"{p[2]}|{p[3]}|{p[0]:020d}".encode()


def country_status_prefix(country: str, status: str) -> bytes:
    return f"{country}|{status}|".encode()


def created_at_key(p: Profile) -> bytes:
    return b"%020d|%020d" % (p[4], p[0])


def created_at_bounds(from_ms: int, to_ms: int) -> tuple[bytes, bytes]:
    """Inclusive ``[start, stop]`` keys of a created-at range query."""
    return b"%020d|%020d" % (from_ms, 0), b"%020d|%020d" % (to_ms, INT63_MAX)


def reputation_key(p: Profile) -> bytes:
    return b"%010d|%020d" % (MAX_REPUTATION - p[6], p[0])


def uid_of_index_key(key: bytes) -> int:
    """Every secondary index key ends with the 20-digit user id."""
    return int(key[-20:])


def py_email_many(uids: Iterable[int]) -> list[str]:
    return [email_of(u) for u in uids]


def py_created_at_many(uids: Iterable[int], seed: int) -> list[int]:
    return [created_at_of(u, seed) for u in uids]
