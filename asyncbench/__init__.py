"""asyncbench: an async benchmark framework for storage engines (the profile-store workload)."""

__version__ = "0.1.0"
