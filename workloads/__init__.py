"""Workloads the runner can drive; today the profile-store workload (ycsb/: YCSB's pure parts, not yet runnable)."""
