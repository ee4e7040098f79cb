"""A run on a store an earlier run built (``--reuse-data``): what the store must be, and what each phase must read from it."""
