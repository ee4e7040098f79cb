"""The run's directories: which paths a run will write, checked and locked before it starts."""
