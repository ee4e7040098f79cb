"""The plan: loading and validating a TOML benchmark plan (plus command-line overrides).

A package split by what it parses, so each table of a plan has one module: ``run_keys`` (the
``[run]`` table, one row per key), ``phases`` (the ``[[phase]]`` list and the steps that
change it after the flags), ``engines`` (engine names and ``[engines.NAME]``), ``counts``
(count text and ``[counts]``), ``capacity`` (``[slo]``), ``plan`` (the file, composing
them), ``child_copy`` (the config a child process runs), over the ``model`` they fill in and
the ``readers`` and ``errors`` they share. Every name callers use is re-exported here, so
``from asyncbench.config import X`` does not depend on that layout.
"""

from __future__ import annotations

from asyncbench.config.capacity import check_capacity, slo_for, slo_table
from asyncbench.config.child_copy import from_json, to_json
from asyncbench.config.counts import count_text, read_counts
from asyncbench.config.engines import ENGINE_NAME, engine_settings, validate_engine_names
from asyncbench.config.errors import ConfigError
from asyncbench.config.model import BenchConfig, Level, PhaseSpec, default_engines
from asyncbench.config.phases import (
    MAX_PHASES,
    PHASE_KEYS,
    chart_phases,
    check_phase_counts,
    check_phase_total,
    pace_phases,
    read_phases,
    searchable,
    selected_phases,
)
from asyncbench.config.plan import MAX_PLAN_BYTES, TOP_KEYS, check_pacing, check_repeats, from_document, load
from asyncbench.config.readers import MAX_RATE, parse_rate, parse_rates
from asyncbench.config.run_keys import (
    CLUSTER_SCHEMES,
    RUN_KEYS,
    Bool,
    CapacityRange,
    Checked,
    ClusterAddress,
    EngineNames,
    Int,
    IntList,
    Name,
    PathValue,
    PhaseSelection,
    RateRequirements,
    RunKey,
    Timeout,
    ValueType,
    WorkloadName,
    apply_run_key,
)

__all__ = [
    "CLUSTER_SCHEMES",
    "ENGINE_NAME",
    "MAX_PHASES",
    "MAX_PLAN_BYTES",
    "MAX_RATE",
    "PHASE_KEYS",
    "RUN_KEYS",
    "TOP_KEYS",
    "BenchConfig",
    "Bool",
    "CapacityRange",
    "Checked",
    "ClusterAddress",
    "ConfigError",
    "EngineNames",
    "Int",
    "IntList",
    "Level",
    "Name",
    "PathValue",
    "PhaseSelection",
    "PhaseSpec",
    "RateRequirements",
    "RunKey",
    "Timeout",
    "ValueType",
    "WorkloadName",
    "apply_run_key",
    "chart_phases",
    "check_capacity",
    "check_pacing",
    "check_phase_counts",
    "check_phase_total",
    "check_repeats",
    "count_text",
    "default_engines",
    "engine_settings",
    "from_document",
    "from_json",
    "load",
    "pace_phases",
    "parse_rate",
    "parse_rates",
    "read_counts",
    "read_phases",
    "searchable",
    "selected_phases",
    "slo_for",
    "slo_table",
    "to_json",
    "validate_engine_names",
]
