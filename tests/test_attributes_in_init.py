"""The LSM engine's long-lived objects set every attribute in ``__init__``, so one place
lists what an ``LsmTree`` or a ``SegmentReader`` holds (attributes first assigned in a
helper such as ``_open`` or ``_read_index`` are invisible to a reader of ``__init__``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def attributes_first_set_outside_init(path: Path, class_name: str) -> set[str]:
    (cls,) = [
        n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ClassDef) and n.name == class_name
    ]
    in_init: set[str] = set()
    elsewhere: set[str] = set()
    for fn in cls.body:
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AnnAssign | ast.AugAssign):
                targets = [node.target]
            else:
                continue
            for target in targets:
                for t in ast.walk(target):
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                        (in_init if fn.name == "__init__" else elsewhere).add(t.attr)
    return elsewhere - in_init


@pytest.mark.parametrize(
    ("path", "class_name"),
    [("engines/lsm/tree.py", "LsmTree"), ("engines/lsm/segment_reader.py", "SegmentReader")],
)
def test_every_attribute_is_set_in_init(path: str, class_name: str) -> None:
    assert attributes_first_set_outside_init(ROOT / path, class_name) == set()
