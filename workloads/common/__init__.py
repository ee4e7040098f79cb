"""What both workloads draw with: seeded streams, YCSB's request distributions (uniform,
zipfian, scrambled zipfian, latest, hotspot, exponential, sequential), the FNV hash they
use and the skew a phase ran. Pure functions of a seed: no store, no framework; YCSB's
mixed phase and the profile store's mixed phase import them from here.
"""
