"""The bounds of a run's settings, shared by the plan reader (``asyncbench.config``) and the
result loader (``asyncbench.result``).

Those two sit side by side in the layers and may not import each other; a result file
that claims what no plan could ask for (parallelism 10**9) is damaged, so the loader
checks the same bounds the plan reader enforces, from here.
"""

from __future__ import annotations

import re

__all__ = [
    "ENGINE_NAME",
    "INT32_MAX",
    "INT32_MIN",
    "MAX_OPERATIONS",
    "MAX_PARALLELISM",
    "MAX_NAME_CHARS",
    "MAX_PROFILES",
    "MAX_RECORD_BYTES",
    "MAX_RESULT_BYTES",
    "MAX_RESULT_ENGINES",
    "MAX_RESULT_NAME_CHARS",
    "MAX_RESULT_PHASES",
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
#: A phase name in a result: the plan's, plus what the run adds (`` (2)`` to a repeated
#: automatic name, `` @ 20k/s`` to a sweep level's).
MAX_RESULT_NAME_CHARS = MAX_NAME_CHARS + 40
#: An engine name is also its data directory's name: one plain path component (so no
#: ``/``, ``..`` at its start, NUL or newline), at most :data:`MAX_NAME_CHARS`.
ENGINE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")

#: What a result may hold, checked when it is loaded (``report``, ``compare``): real
#: results are a few hundred kB (a 10-engine, 20-phase run with over-time series: well
#: under 10 MB) and name a few engines and tens of phases; ``report`` of what a damaged or
#: crafted file claims (1,000 engines: 562 s; 100k phases: over 15 minutes; 250 MB: 3 GB
#: of memory, issue 52) is refused with a message naming the bound instead.
MAX_RESULT_BYTES = 64 * 1024 * 1024
MAX_RESULT_ENGINES = 256  # runs of engines: engines x repeats
MAX_RESULT_PHASES = 1_000
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
