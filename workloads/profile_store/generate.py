"""Profiles by uid: the compiled generator when it is built, else ``profiles.py_create_many``.

The one place the workload's profiles are made for a run. It sits above
:mod:`.kernels` (which imports the pure definitions in profiles.py as its fallback), so
profiles.py never imports the kernels back: no import cycle.
"""

from __future__ import annotations

from asyncbench.workloads.profile_store import kernels
from asyncbench.workloads.profile_store.profiles import Profile, seed_word


def create_many(start: int, count: int, seed: int) -> list[Profile]:
    """Profiles ``start .. start+count-1`` (compiled when built; equal to py_create_many)."""
    return kernels.create_many(start, count, seed_word(seed))


def create(uid: int, seed: int) -> Profile:
    return create_many(uid, 1, seed)[0]
