"""Measuring: latency histograms, statistics, aggregation of repeats, correctness, provenance."""
