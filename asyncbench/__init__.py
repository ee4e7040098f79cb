"""asyncbench: an async benchmark framework for storage engines (the profile-store workload)."""

__version__ = "0.2.0"  # keep equal to pyproject.toml (a test checks)
