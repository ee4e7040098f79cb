"""Where a kept store's bytes are: per tree (lsm) or database (rocksdb), read-only.

Why: storage is the one figure of a run that does not depend on the machine's load, so
why two engines' stores part (issue 40 item 2: the LSM's 10M store 1.47x RocksDB's,
within 2 % at 2M) can be found on a loaded machine from stores kept with
``--keep-data``. This reads such a store and changes nothing in it:

- **lsm**: per tree, the segments its checksummed manifest lists (their bytes, entries,
  tombstones), the keys live across them (one keys-only merge: entries shadowed by a
  newer segment or deleted are the *dead* ones, what a merge policy leaves behind), and
  every other file of the directory (logs, obsolete or unlisted files) with its bytes;
- **rocksdb**: per database, opened read-only, the files and bytes on each level and the
  compression RocksDB reports for it (``rocksdb.compression-ratio-at-levelN``: the
  reference options compress nothing on L0 and the base level and LZ4 below it), plus
  the bytes of everything else in the directory (logs, OPTIONS, MANIFEST).

    .venv/bin/python benchmarks/store_space.py --engine lsm /path/to/data
    .venv/bin/python benchmarks/store_space.py --engine rocksdb /path/to/data --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from asyncbench.workloads.profile_store.kv_store import STORE_NAMES

#: RocksDB's default number of levels.
_LEVELS = 7


def _files(directory: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in sorted(directory.iterdir()) if p.is_file()}


def lsm_tree(directory: Path, codec_estimate: bool = False) -> dict[str, Any]:
    """One LSM tree's segments, live and dead entries and other files (read-only: the
    manifest is read and the listed segments mapped; nothing is written or deleted).
    ``codec_estimate``: also the segments' bytes if each data block as stored were
    compressed on its own with LZ4 and with zlib level 1 (what a tree past its
    ``compression_threshold_mb`` writes, format 4 or 3,
    segment format 3: this says what it would save on a store written plain)."""
    from asyncbench.engines.lsm.codec import LZ4, ZLIB, pack
    from asyncbench.engines.lsm.merging_iterator import merge
    from asyncbench.engines.lsm.meta import read_meta
    from asyncbench.engines.lsm.segment_reader import SegmentReader

    meta = read_meta(directory)
    if meta is None:
        raise SystemExit(f"{directory}: no meta.json: not an LSM tree")
    files = _files(directory)
    segs = [SegmentReader(directory / f"seg-{i:08d}.sst", i) for i in meta.segments]  # as LsmTree names them
    try:
        cursors = [s.cursor(keys_only=True, blocks=64, max_blocks=64, cached=False) for s in segs]
        live = sum(len(keys) for keys, _ in merge(cursors, True))
        zlib_bytes = lz4_bytes = None
        if codec_estimate:
            zlib_bytes = lz4_bytes = 0
            for s in segs:
                raw = sum(s.lengths)
                zlib_bytes += s.size - raw
                lz4_bytes += s.size - raw
                for i in range(len(s.lengths)):  # one block at a time: a tree can be GBs
                    b = s.read_block(i)
                    zlib_bytes += len(pack(ZLIB, b))
                    lz4_bytes += len(pack(LZ4, b))
        seg_rows = [
            {
                "id": s.id,
                "bytes": s.size,
                "compressed": s.compressed,
                "plain_bytes": s.plain_size,
                "entries": s.entries,
                "tombstones": s.entries - s.live,
            }
            for s in segs
        ]
    finally:
        for s in segs:
            s.close()
    seg_names = {f"seg-{i:08d}.sst" for i in meta.segments}
    entries = sum(r["entries"] for r in seg_rows)
    seg_bytes = sum(r["bytes"] for r in seg_rows)
    return {
        "segments": seg_rows,
        "segment_bytes": seg_bytes,
        "entries": entries,
        "live": live,
        "dead": entries - live,
        "dead_fraction": (entries - live) / entries if entries else 0.0,
        "bytes_per_live_entry": seg_bytes / live if live else 0.0,
        "segment_bytes_blocks_zlib1": zlib_bytes,
        "segment_bytes_blocks_lz4": lz4_bytes,
        "other_files": {k: v for k, v in files.items() if k not in seg_names},
        "bytes": sum(files.values()),
    }


def rocksdb_db(directory: Path) -> dict[str, Any]:
    """One RocksDB database's levels (opened read-only) and files."""
    import rocksdict

    db = rocksdict.Rdict(
        str(directory), rocksdict.Options(raw_mode=True), access_type=rocksdict.AccessType.read_only()
    )
    try:
        levels = []
        for n in range(_LEVELS):
            nfiles = db.property_int_value(f"rocksdb.num-files-at-level{n}") or 0
            if not nfiles:
                continue
            ratio = db.property_value(f"rocksdb.compression-ratio-at-level{n}")
            levels.append({"level": n, "files": nfiles, "compression_ratio": float(ratio) if ratio else None})
        live_files = db.live_files()
        keys = db.property_int_value("rocksdb.estimate-num-keys")
    finally:
        db.close()
    by_level: dict[int, int] = {}
    for f in live_files:
        by_level[f["level"]] = by_level.get(f["level"], 0) + int(f["size"])
    for row in levels:
        row["bytes"] = by_level.get(row["level"], 0)
    files = _files(directory)
    sst = sum(v for k, v in files.items() if k.endswith(".sst"))
    return {
        "levels": levels,
        "estimate_num_keys": keys,
        "sst_bytes": sst,
        "other_bytes": sum(files.values()) - sst,
        "bytes": sum(files.values()),
    }


def report(engine: str, data: Path, codec_estimate: bool = False) -> dict[str, Any]:
    stores = {
        name: lsm_tree(data / name, codec_estimate) if engine == "lsm" else rocksdb_db(data / name)
        for name in STORE_NAMES
    }
    top = _files(data)
    return {
        "engine": engine,
        "data": str(data),
        "stores": stores,
        "top_level_bytes": sum(top.values()),
        "bytes": sum(s["bytes"] for s in stores.values()) + sum(top.values()),
    }


def _mb(n: float) -> str:
    return f"{n / 1e6:,.1f} MB"


def render(rep: dict[str, Any]) -> str:
    out = [f"{rep['engine']} store {rep['data']}: {_mb(rep['bytes'])}"]
    for name, s in rep["stores"].items():
        if rep["engine"] == "lsm":
            segs = ", ".join(
                f"seg-{r['id']} {_mb(r['bytes'])}"
                + (f" compressed ({_mb(r['plain_bytes'])} plain)" if r["compressed"] else "")
                + f" ({r['entries']:_} entries)"
                for r in s["segments"]
            )
            other = sum(s["other_files"].values())
            out.append(
                f"  {name}: {_mb(s['bytes'])}; segments: {segs or 'none'}; live {s['live']:_}, "
                f"dead {s['dead']:_} ({100 * s['dead_fraction']:.2f} %); "
                f"{s['bytes_per_live_entry']:.1f} B per live entry; other files {_mb(other)} "
                f"({', '.join(s['other_files']) or 'none'})"
                + (
                    f"; with LZ4 blocks {_mb(s['segment_bytes_blocks_lz4'])}, "
                    f"zlib-1 blocks {_mb(s['segment_bytes_blocks_zlib1'])}"
                    if s["segment_bytes_blocks_zlib1"] is not None
                    else ""
                )
            )
        else:
            lv = ", ".join(
                f"L{r['level']}: {r['files']} files {_mb(r['bytes'])}"
                + (f" (compression ratio {r['compression_ratio']:.2f})" if r["compression_ratio"] else "")
                for r in s["levels"]
            )
            out.append(
                f"  {name}: {_mb(s['bytes'])}; {lv or 'no files'}; about {s['estimate_num_keys'] or 0:_} keys; "
                f"other files {_mb(s['other_bytes'])}"
            )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("data", type=Path, help="the engine's data directory (kept with --keep-data)")
    ap.add_argument("--engine", choices=("lsm", "rocksdb"), required=True)
    ap.add_argument("--json", type=Path, help="also write the report as JSON here")
    ap.add_argument(
        "--codec-estimate",
        action="store_true",
        help="lsm: also the segments' size if each block were compressed (LZ4; zlib level 1)",
    )
    args = ap.parse_args(argv)
    if not args.data.is_dir():
        print(f"command line: data {args.data}: not a directory", file=sys.stderr)
        return 2
    rep = report(args.engine, args.data, args.codec_estimate)
    print(render(rep))
    if args.json:
        args.json.write_text(json.dumps(rep, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
