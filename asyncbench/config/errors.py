"""The one error of a plan or a flag, so every reader raises the same thing.

``ConfigError`` names the file (or "command line"), the key and the reason; the CLI turns it
into one line and exit code 2, before anything runs or is written.
"""

from __future__ import annotations

from asyncbench.parse import escape_unprintable


class ConfigError(ValueError):
    """A problem in a plan file or flag: ``where`` is the file (or "command line"), ``key`` the key."""

    def __init__(self, where: str, key: str, reason: str) -> None:
        # what a message quotes from the input (a key, a path) never reaches a terminal raw
        super().__init__(escape_unprintable(f"{where}: {key}: {reason}"))
        self.where, self.key, self.reason = where, key, reason
