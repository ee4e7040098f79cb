"""The bounds of a run's settings, shared by the plan reader (``asyncbench.config``) and the
result loader (``asyncbench.result``).

Those two sit side by side in the layers and may not import each other; a result file
that claims what no plan could ask for (parallelism 10**9) is damaged, so the loader
checks the same bounds the plan reader enforces, from here.
"""

from __future__ import annotations

__all__ = [
    "INT32_MAX",
    "INT32_MIN",
    "MAX_OPERATIONS",
    "MAX_PARALLELISM",
    "MAX_NAME_CHARS",
    "MAX_PROFILES",
    "MAX_RECORD_BYTES",
    "MAX_TIMEOUT_SECONDS",
    "SIZE_BOUNDS",
    "record_problem",
    "size_bound",
]

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
MAX_PARALLELISM = 1024
MAX_PROFILES = 1_000_000_000
#: The longest name a plan or a result may give a phase or an engine: a name is shown in
#: tables and titles and makes part of chart file names (issue 52: a 200-byte phase name
#: ran the whole run, then could not save its charts, ``File name too long``).
MAX_NAME_CHARS = 100
#: A per-engine timeout beyond a year is a typo (and ``inf`` cannot be stored in JSON).
MAX_TIMEOUT_SECONDS = 366 * 24 * 3600.0
#: The most operations one mixed phase draws (the stream is drawn before the phase's clock).
MAX_OPERATIONS = MAX_PROFILES * 10

#: The largest value of each whole-number workload size, by the plan's key (YCSB's
#: ``[ycsb]`` table and mixed phase; the YCSB converter's ``operationcount`` is the plan's
#: ``operations``). One table, read by the plan reader (``workloads/common/params.py``)
#: and the converter (``workloads/ycsb/convert.py``) alike, so a size no run can hold is
#: refused before anything runs (issue 52: fieldcount 10**9 failed with MemoryError after
#: the plan was drawn; recordcount 10**30 converted into a plan the run then refused). A
#: key not named here is bounded by :data:`MAX_PROFILES`.
SIZE_BOUNDS: dict[str, int] = {
    "recordcount": MAX_PROFILES,
    "operations": MAX_OPERATIONS,
    "operationcount": MAX_OPERATIONS,
    "fieldcount": 1_024,  # a record's field count is stored in 16 bits; YCSB's default is 10
    "fieldlength": 1 << 20,  # 1 MiB per field (YCSB's default is 100 bytes)
    "zeropadding": 64,  # digits a key number is padded to (a 64-bit key has at most 20)
    "minscanlength": MAX_PROFILES,
    "maxscanlength": MAX_PROFILES,
}
#: The largest record (fieldcount x fieldlength): a load builds its records in batches in
#: memory, and every read returns whole records.
MAX_RECORD_BYTES = 1 << 20


def size_bound(key: str) -> int:
    """The largest value a whole-number workload size ``key`` may take."""
    return SIZE_BOUNDS.get(key, MAX_PROFILES)


def record_problem(fieldcount: int, fieldlength: int) -> str | None:
    """Why a record of ``fieldcount`` fields of ``fieldlength`` bytes is refused, or None."""
    size = fieldcount * fieldlength
    if size > MAX_RECORD_BYTES:
        return (
            f"a record of {fieldcount:_d} fields of {fieldlength:_d} bytes is {size:_d} bytes, "
            f"more than the {MAX_RECORD_BYTES:_d} a record may hold (fieldcount x fieldlength)"
        )
    return None
