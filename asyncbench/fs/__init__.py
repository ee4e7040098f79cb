"""File primitives every layer may use: writing only our own files, locks, reading inputs."""
