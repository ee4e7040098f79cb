"""The YCSB workload's pure parts: request distributions, records and keys, operation drawing, property files.

YCSB's core workloads (A-F) are the field's shared vocabulary for key/value stores; this
package carries their facts (generators, key names, proportions, property files) so a
plan written for YCSB means the same here, with every draw seeded (the same operations
on every run and machine) and every result folded into an exact checksum. Nothing here
talks to an engine or the runner: those use these modules.
"""
