"""The verify checksum a reuse run expects, computed from the plan alone (issue 34), against
the spec's reference and every published configuration: the arithmetic is the workload's,
not an engine's."""

from __future__ import annotations

import pytest

from asyncbench.workloads.profile_store.expected import verify_expected
from asyncbench.workloads.profile_store.plan import Counts, default_counts, draw_plan
from asyncbench.workloads.profile_store.published import load_published
from asyncbench.workloads.profile_store.reference import (
    REFERENCE_CHECKSUMS,
    REFERENCE_PROFILES,
    REFERENCE_QUERIES,
    REFERENCE_SEED,
)


def test_verify_from_the_plan_is_the_spec_reference() -> None:
    counts = Counts.for_profiles(REFERENCE_PROFILES, queries=REFERENCE_QUERIES, post_queries=REFERENCE_QUERIES)
    plan = draw_plan(counts, REFERENCE_SEED)
    assert verify_expected(plan, [("updates", None)]) == REFERENCE_CHECKSUMS["final (verify)"]
    assert verify_expected(plan, []) != REFERENCE_CHECKSUMS["final (verify)"]  # the updates count


@pytest.mark.parametrize("profiles", sorted({r["profiles"] for r in load_published()["configurations"]}))
def test_verify_from_the_plan_is_the_published_one(profiles: int) -> None:
    doc = load_published()
    (want,) = {r["checksums"]["final (verify)"] for r in doc["configurations"] if r["profiles"] == profiles}
    plan = draw_plan(Counts.for_profiles(profiles, **default_counts(profiles)), doc["seed"])
    assert verify_expected(plan, [("updates", None)]) == want
