"""The package's layers hold: every import-linter contract in pyproject.toml is kept and no
module imports itself back through a chain (``scripts/lint-layers``, which CI runs here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_layer_contracts_are_kept_and_there_is_no_import_cycle() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "lint-layers")], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "Contracts: 2 kept, 0 broken." in done.stdout
    assert "import cycles: 0 among" in done.stdout
