"""Capacity under a latency bound: the search for the highest sustained rate, and whether the machine, not the engine, limited it."""
