"""Crashes in a plan: the process a crash kills, the power-cut filesystem it may run on, and the recover phase after it."""
