"""Regenerate ``workloads/profile_store/published_reference.json``: the checksums of the
published reference reports' configurations, reproduced by this tool.

The published reports cannot be fetched at run time, so their checksums are shipped as
data. They are reproduced here by running the reference plan (``benchmarks.toml``, default
counts, seed 570123434) on the harness-floor engine, whose checksums are the workload's
own; this tool's 100K P1 and 500K P16 checksums were verified equal to the published
reports. Sizes the machine cannot afford are left out, never invented.

    .venv/bin/python benchmarks/published_reference.py --profiles 100k,500k
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson

from asyncbench.engines import HARNESS_FLOOR
from asyncbench.measure.correctness import reference_identity
from asyncbench.result import RunResult
from asyncbench.workloads.profile_store.published import PUBLISHED_PATH, load_published

ROOT = Path(__file__).resolve().parent.parent

NOTE = (
    "Checksums of the published reference reports' configurations (reference plan, default "
    "counts, seed 570123434), reproduced by this tool with benchmarks/published_reference.py; "
    "its 100K P1 and 500K P16 checksums were verified equal to the published reports. "
    "Sizes not listed were not reproduced on the generating machine (time and memory)."
)


def generate(profiles: str, parallelism: str, limits: list[int]) -> list[dict]:
    rows = []
    for limit in limits:
        with tempfile.TemporaryDirectory(prefix="asyncbench-published-") as tmp:
            cmd = [sys.executable, "-m", "asyncbench", str(ROOT / "benchmarks.toml"), "--engine", HARNESS_FLOOR]
            cmd += ["--profiles", profiles, "--parallelism", parallelism, "--limit", str(limit), "--yes"]
            cmd += ["--no-isolate", "--no-progress", "--output", f"{tmp}/out", "--data", f"{tmp}/data"]
            subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
            for path in sorted(Path(tmp, "out").glob("profiles-*/asyncbench-*.json")):
                run = RunResult.from_json(path.read_bytes())
                (engine,) = run.engines
                checksums = {reference_identity(p): p.checksum for p in engine.phases if p.checksum}
                if len(checksums) != 17:
                    raise SystemExit(f"{path}: {len(checksums)} checksums, expected 17")
                rows.append(
                    {"profiles": run.profiles, "parallelism": run.parallelism, "limit": limit, "checksums": checksums}
                )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profiles", default="100k,500k")
    ap.add_argument("--parallelism", default="1,16")
    ap.add_argument("--limit", default="50,100")
    ap.add_argument("--merge", action="store_true", help="keep configurations already in the file")
    args = ap.parse_args()
    rows = generate(args.profiles, args.parallelism, [int(x) for x in args.limit.split(",")])
    if args.merge and PUBLISHED_PATH.exists():
        fresh = {(r["profiles"], r["parallelism"], r["limit"]) for r in rows}
        old = load_published()
        rows = [r for r in old["configurations"] if (r["profiles"], r["parallelism"], r["limit"]) not in fresh] + rows
    rows.sort(key=lambda r: (r["profiles"], r["parallelism"], r["limit"]))
    doc = {"note": NOTE, "seed": 570123434, "plan": "benchmarks.toml", "configurations": rows}
    PUBLISHED_PATH.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
    print(f"{PUBLISHED_PATH}: {len(rows)} configurations")


if __name__ == "__main__":
    main()
