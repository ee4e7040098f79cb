"""One engine's run in this process: the plan's phases in order, each split among its workers, timed batch by batch, and turned into result rows."""
