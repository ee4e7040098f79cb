"""Workloads the runner can drive; today the profile-store workload."""
