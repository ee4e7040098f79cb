"""Convert chart SVGs to PNG so they can be looked at (and checked for overlaps) as images.

Usage: python benchmarks/render_png.py FILE.svg|DIR [...] [--out DIR] [--scale 1.5]
Uses cairosvg (``pip install cairosvg``) or, if absent, ``rsvg-convert`` (librsvg2-bin).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
from pathlib import Path


def to_png(svg: Path, png: Path, scale: float) -> None:
    """Rasterize one SVG; prefers cairosvg, falls back to rsvg-convert."""
    try:
        import cairosvg
    except ImportError:
        exe = shutil.which("rsvg-convert")
        if exe is None:
            raise SystemExit(
                "need cairosvg (pip install cairosvg) or rsvg-convert (apt-get install librsvg2-bin)"
            ) from None
        subprocess.run([exe, "-z", str(scale), "-b", "white", "-o", str(png), str(svg)], check=True)
        return
    cairosvg.svg2png(url=str(svg), write_to=str(png), scale=scale, background_color="white")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("paths", nargs="+", type=Path)
    p.add_argument("--out", type=Path, help="directory for the PNGs (default: beside each SVG)")
    p.add_argument("--scale", type=float, default=1.5)
    args = p.parse_args()
    svgs: list[Path] = []
    for path in args.paths:
        svgs += sorted(path.glob("*.svg")) if path.is_dir() else [path]
    for svg in svgs:
        out_dir = args.out or svg.parent
        out_dir.mkdir(parents=True, exist_ok=True)
        png = out_dir / (svg.stem + ".png")
        to_png(svg, png, args.scale)
        print(png)


if __name__ == "__main__":
    main()
