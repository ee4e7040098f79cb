"""Capacity under a latency bound: the search for the highest sustained rate, its probes across client processes, and whether the machine limited it."""
