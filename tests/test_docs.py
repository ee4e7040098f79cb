"""The README's commands and links, and the docs pages', must work from a fresh clone."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import ROOT

#: The README is a front page (issue 54: it was 52.8 KB doing a docs site's work).
README_MAX_BYTES = 15 * 1024


def _readme() -> str:
    return (ROOT / "README.md").read_text()


def _pages() -> list[Path]:
    return [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_readme_and_docs_links_point_at_files_in_the_repository() -> None:
    broken = [
        f"{page.relative_to(ROOT)} -> {target}"
        for page in _pages()
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text())
        if not (page.parent / target).exists()
    ]
    assert not broken, broken
    assert all("shared/spec" not in page.read_text() for page in _pages())


def test_readme_is_a_front_page_and_the_index_reaches_every_page() -> None:
    assert len(_readme().encode()) <= README_MAX_BYTES
    assert "](docs/index.md)" in _readme()
    index = (ROOT / "docs" / "index.md").read_text()
    unlisted = [
        p.relative_to(ROOT / "docs").as_posix()
        for p in sorted((ROOT / "docs").rglob("*.md"))
        if p.name != "index.md" and f"]({p.relative_to(ROOT / 'docs').as_posix()})" not in index
    ]
    assert not unlisted, f"docs/index.md does not link {unlisted}"


def test_every_lab_note_states_its_date_commit_and_machine() -> None:
    for note in sorted((ROOT / "docs" / "results").glob("*.md")):
        opening = note.read_text().split("\n\n", 2)[1]
        assert re.search(r"\b20\d\d-\d\d-\d\d\b", opening), note.name
        assert re.search(r"\bcommit [0-9a-f]{7,}\b", opening), note.name
        assert "vCPU" in opening or "CPU" in opening, note.name


def test_running_page_and_readme_examples_use_the_virtual_environment() -> None:
    for text in (_readme().split("## More of what it does", 1)[1], (ROOT / "docs" / "cli.md").read_text()):
        block = text.split("```sh", 1)[1].split("```", 1)[0]
        commands = [line for line in block.splitlines() if line.strip()]
        assert commands and all(line.startswith(".venv/bin/python -m asyncbench") for line in commands)
        assert "`python -m asyncbench" not in text  # inline mentions use the venv's python too
        assert "source .venv/bin/activate" in text


def test_workload_spec_states_the_reference_checksums() -> None:
    from asyncbench.workloads.profile_store.reference import REFERENCE_CHECKSUMS

    spec = (ROOT / "docs" / "workload.md").read_text()
    for name, checksum in REFERENCE_CHECKSUMS.items():
        assert f"| {name} | `{checksum}` |" in spec


def test_readme_and_help_say_what_counts_redraw() -> None:
    from asyncbench.cli.main import build_parser

    plans = (ROOT / "docs" / "plans.md").read_text()
    assert "changing a count re-draws that stream and every stream" in plans
    help_text = " ".join(build_parser().format_help().split())
    assert "Changing a count under [counts] re-draws that stream and every stream drawn after it" in help_text


def test_help_and_readme_result_paths_are_those_of_a_real_run(run_cli, tmp_path) -> None:
    """The ``report`` examples name a result as a real run names it (issue 22, item 7: the
    ``--help`` example lacked the ``-p1`` of the real folders)."""
    from asyncbench.cli.main import build_parser

    code, _, out = run_cli(str(ROOT / "benchmarks" / "quick.toml"), "--engine", "memory", "--profiles", "1k", "--no-isolate")
    assert code == 0, out
    (real,) = (tmp_path / "out").glob("profiles-*/asyncbench-*.json")
    shape = r"profiles-\d+-p\d+/asyncbench-\d{8}T\d{6}\.\d{3}Z\.json"
    assert re.fullmatch(shape, real.relative_to(tmp_path / "out").as_posix())
    stamp = real.stem.removeprefix("asyncbench-")  # what <stamp> stands for
    (example,) = re.findall(r"asyncbench report results/(\S+)", build_parser().format_help())
    assert re.fullmatch(shape, example.replace("<stamp>", stamp)), example
    readme = re.findall(r"asyncbench report results/(\S+)", _readme())
    assert readme and all(re.fullmatch(shape, p.replace("<stamp>", stamp)) for p in readme)
    assert f"report: {real.with_suffix('.md')}" in out and f"result: {real}" in out


def test_result_schema_documents_every_result_field() -> None:
    """Issue 39: docs/result-schema.md lacked ``client_cpu_seconds``, ``release_skew_seconds``,
    ``client_processes`` (and the reused-store skip): every field a result holds is named."""
    import dataclasses

    from asyncbench.result import ClientProcess, EngineResult, PhaseResult, RunResult

    schema = (ROOT / "docs" / "result-schema.md").read_text()
    missing = [
        f"{cls.__name__}.{f.name}"
        for cls in (RunResult, EngineResult, PhaseResult, ClientProcess)
        for f in dataclasses.fields(cls)
        if f"`{f.name}`" not in schema
    ]
    assert not missing, missing
    skipped = next(line for line in schema.splitlines() if line.startswith("| `skipped` | bool"))
    assert "reuse" in skipped


def test_readme_counts_the_charts_without_guessing() -> None:
    """Issue 39: the README said "8 or 9 charts" for the full plan."""
    for page in _pages():
        assert "8 or 9" not in page.read_text() and "9 or 10" not in page.read_text(), page.name


def test_readme_documents_the_log_lines_grouping_fields() -> None:
    """Issue 39: the log's batch and phase lines carry ``repeat``, ``profiles`` and
    ``parallelism``; docs/outputs.md says so where it describes the log."""
    readme = (ROOT / "docs" / "outputs.md").read_text()
    log = readme[readme.index("`OUTPUT/asyncbench-<stamp>.log`") :][:1200]
    assert all(f"`{name}`" in log for name in ("repeat", "profiles", "parallelism", "worker", "done", "p99_us"))
