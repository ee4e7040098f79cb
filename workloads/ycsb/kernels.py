"""The one import point of the YCSB workload's compiled kernels, or of their pure-Python twins.

The compiled extension ``workloads.ycsb._kernels`` (``_kernels.c``, built by ``pip install
-e .`` when a C compiler is present) does the per-operation work of a YCSB operation that
is not the engine's: its checksum digest, its key name, its record. Each function equals
its pure-Python definition bit for bit (``tests/test_ycsb_kernels.py``):

=============  ==========================  =============================================
name           pure-Python definition      who calls it
=============  ==========================  =============================================
``digest``     ``digest.py_digest``        every operation's checksum digest
``fold_bytes`` ``digest.py_fold_bytes``    a scan's digest, record by record
``mix``        ``digest.py_mix``           a scan's digest, finished
``key_names``  ``keys.py_key_names``       the load's and each batch's key names
``records``    ``codec.py_records``        the load's and the inserts' records
``value``      ``codec.py_value``          an update's field value
``splice``     ``codec.py_splice``         a key/value engine's one-field update
=============  ==========================  =============================================

Without the extension everything runs and every checksum is the same, only slower;
:data:`ACCELERATED` is False and :data:`FALLBACK_REASON` says why. The profile store's
``ASYNCBENCH_NO_KERNELS=1`` turns these off too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from asyncbench.native_build import load_extension
from asyncbench.workloads.ycsb import codec, keys
from asyncbench.workloads.ycsb import digest as digests

_compiled, FALLBACK_REASON = load_extension("asyncbench.workloads.ycsb._kernels", Path(__file__).with_name("_kernels.c"))
#: True when the compiled kernels are in use.
ACCELERATED: bool = _compiled is not None

if _compiled is not None:
    # The C extension is untyped: each kernel has its pure-Python twin's signature.
    digest: Callable[[int, int, bytes, bytes | None], int] = _compiled.digest
    fold_bytes: Callable[[int, bytes], int] = _compiled.fold_bytes
    mix: Callable[[int], int] = _compiled.mix
    key_names: Callable[[Iterable[int], bool, int], list[bytes]] = _compiled.key_names
    records: Callable[[bytes, Iterable[int], int, int], list[bytes]] = _compiled.records
    value: Callable[[bytes, int, int, int, int], bytes] = _compiled.value
    splice: Callable[[bytes, int, bytes], bytes] = _compiled.splice
else:
    digest = digests.py_digest
    fold_bytes = digests.py_fold_bytes
    mix = digests.py_mix
    key_names = keys.py_key_names
    records = codec.py_records
    value = codec.py_value
    splice = codec.py_splice


def status_line() -> str:
    """One line for a console or a report."""
    if ACCELERATED:
        return "compiled C kernels"
    return f"pure-Python fallback (slower: timings are not comparable): {FALLBACK_REASON}"
