"""Every command's ``--help`` is a short plain help: a one-line description, its flags and a
few lines of epilog, never a module docstring with Sphinx markup (issue 51, finding 11:
``floor --help`` printed its 90-line docstring, ``:func:`` and ``::`` included)."""

from __future__ import annotations

import re

import pytest

from asyncbench.cli.main import COMMANDS, main

SPHINX = re.compile(r"``|:(func|mod|class|meth|data|attr):`|::$", re.MULTILINE)


def _help(command: str, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_commands_help_has_no_sphinx_markup(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(command, capsys)
    assert not SPHINX.search(text), SPHINX.search(text)


def test_floor_help_is_short_and_points_at_the_docs(capsys: pytest.CaptureFixture[str]) -> None:
    text = _help("floor", capsys)
    assert "What the harness costs per phase kind, against the plainest loop." in text
    assert "exit codes: 0 every A/B check held" in text and "docs/results/floor-200k.md" in text
    epilog = text[text.rindex("--pin CPU") :].splitlines()[1:]
    assert len([line for line in epilog if line.strip()]) <= 15, epilog
    assert "Stores and state" not in text and "Item counts" not in text  # the developer's manual stays in the source
