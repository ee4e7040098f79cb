"""The one phase sequence both the in-process and the scaled-out run drive: the plan's phases in order, each skipped, run or searched, and what the run will run."""
