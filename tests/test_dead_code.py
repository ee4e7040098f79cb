"""No unused code in the package: vulture over everything that may call it (the package,
the tests, examples/, benchmarks/, scripts/), with pyproject's [tool.vulture] settings
(the names used where vulture cannot see, each with its reason); any finding inside
asyncbench/, engines/ or workloads/ fails. About two seconds."""

from __future__ import annotations

import tomllib
from pathlib import Path

import vulture  # a test extra (pyproject)

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("asyncbench", "engines", "workloads")
USERS = ("tests", "examples", "benchmarks", "scripts/typecheck", "scripts/lint-layers")


def test_the_package_has_no_unused_code() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["vulture"]
    v = vulture.Vulture(ignore_names=config["ignore_names"])
    v.scavenge([str(ROOT / p) for p in (*PRODUCT, *USERS)])
    found = [
        f"{Path(item.filename).relative_to(ROOT)}:{item.first_lineno}: {item.message}"
        for item in v.get_unused_code(min_confidence=config["min_confidence"])
        if Path(item.filename).relative_to(ROOT).parts[0] in PRODUCT
    ]
    assert found == []
