"""The profile-store workload: profiles, the seeded plan, the checksum and the phase table.

Everything that gives the benchmark its meaning lives here; the framework in
``asyncbench`` only runs phase kinds from :mod:`asyncbench.workloads.profile_store.phases` against
engines that implement :class:`asyncbench.workloads.profile_store.store.ProfileStore`.
"""
