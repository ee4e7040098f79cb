"""Reopen times the open of a new instance only (as the reference); close is reported apart."""

from __future__ import annotations

import time

import pytest
from conftest import REFERENCE_PLAN
from plugins.own_store_engine import OwnStoreMemoryEngine

from asyncbench import engines


class SlowCloseEngine(OwnStoreMemoryEngine):
    """Closing takes 0.3 s, opening is instant: a reopen that timed the close would show it."""

    name = "slowclose"

    async def close(self) -> None:
        time.sleep(0.3)
        await super().close()


def test_reopen_excludes_close(monkeypatch: pytest.MonkeyPatch, run_cli, tmp_path) -> None:
    monkeypatch.setitem(engines.REGISTRY, "slowclose", f"{__name__}:SlowCloseEngine")
    code, (run,), output = run_cli(str(REFERENCE_PLAN), "--engine", "slowclose", "--no-isolate")
    assert code == 0, output
    reopen = next(p for p in run["engines"][0]["phases"] if p["action"] == "reopen")
    assert reopen["close_seconds"] >= 0.3
    assert reopen["seconds"] < 0.1
    md = next((tmp_path / "out").glob("profiles-*/asyncbench-*.md")).read_text()
    assert "| Close | Reopen (open) |" in md
    assert "close 0.3" in output
