"""Facts about the machine and software for the report's Environment section."""

from __future__ import annotations

import os
import platform
import sys
from importlib import metadata

import psutil

import asyncbench
from workloads.profile_store import kernels


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def package_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def event_loop_backend() -> str:
    try:
        import uvloop  # noqa: F401

        return f"asyncio + uvloop {package_version('uvloop')}"
    except ImportError:
        return "asyncio"


def collect() -> dict[str, str]:
    vm = psutil.virtual_memory()
    return {
        "OS": f"{platform.system()} {platform.release()}",
        "Architecture": platform.machine(),
        "Python": f"{platform.python_implementation()} {sys.version.split()[0]}",
        "CPU model": cpu_model(),
        "Logical CPUs": str(os.cpu_count()),
        "Total memory": f"{vm.total / 2**30:.1f} GiB",
        "Event loop": event_loop_backend(),
        "asyncbench": asyncbench.__version__,
        "Compiled kernels": kernels.status_line(),
        "anyio": package_version("anyio"),
    }
