"""A YCSB plan (the dict :mod:`.convert` writes, or its TOML read back) -> what draws its operations.

Kept apart from the converter so the runner's mixed phase (issue 35) can build its
operation stream from a plan that never came from a YCSB file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from asyncbench.workloads.common.distributions import Params
from asyncbench.workloads.ycsb.operations import KINDS, MixSpec


@dataclass(frozen=True)
class Layout:
    """The usertable a plan loads: its records, fields and key names."""

    recordcount: int
    fieldcount: int
    fieldlength: int
    hashed: bool
    zeropadding: int


def layout(plan: dict[str, Any]) -> Layout:
    y = plan["ycsb"]
    return Layout(y["recordcount"], y["fieldcount"], y["fieldlength"], y["insertorder"] == "hashed", y["zeropadding"])


def mix_spec(plan: dict[str, Any], phase: dict[str, Any]) -> MixSpec:
    """The operation stream's spec for a ``mixed`` phase of ``plan``.

    The scrambled zipfian spreads over the records plus twice the expected inserts, as
    YCSB's CoreWorkload (``expectednewkeys``).
    """
    y = plan["ycsb"]
    proportions = tuple(float(phase[f"{kind}proportion"]) for kind in KINDS)
    ops = phase["operations"]
    params = Params(
        name=phase["requestdistribution"],
        recordcount=y["recordcount"],
        expectednewkeys=int(ops * proportions[KINDS.index("insert")] * 2.0),
        zipfianconstant=phase.get("zipfianconstant", 0.99),
        hotspotdatafraction=phase.get("hotspotdatafraction", 0.2),
        hotspotopnfraction=phase.get("hotspotopnfraction", 0.8),
        exponential_percentile=phase.get("exponential_percentile", 95.0),
        exponential_frac=phase.get("exponential_frac", 0.8571428571),
    )
    return MixSpec(
        operationcount=ops,
        proportions=proportions,  # type: ignore[arg-type]
        distribution=params,
        fieldcount=y["fieldcount"],
        readallfields=phase.get("readallfields", True),
        writeallfields=phase.get("writeallfields", False),
        minscanlength=phase.get("minscanlength", 1),
        maxscanlength=phase.get("maxscanlength", 1000),
        scanlengthdistribution=phase.get("scanlengthdistribution", "uniform"),
    )
