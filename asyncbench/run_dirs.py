"""The directories a run creates, made without following symlinks, and locked for the run.

``--output`` and ``--data`` are the user's to name (a symlink there is their choice and is
followed). Below them asyncbench creates ``profiles-N/`` and ``profiles-N/<engine>/``
itself, so those must be real directories: a symlink or a file in their place is an error
naming it, never something to write through.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["make_real_dir"]


def make_real_dir(path: Path) -> None:
    """Create ``path`` (its parent must exist or be creatable); if it exists it must be a
    directory and not a symlink. OSError naming the path otherwise."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(path)
        return
    except FileExistsError:
        pass
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise NotADirectoryError(
            f"{path} is a symlink; asyncbench creates this directory itself and does not write through symlinks"
        )
    if not stat.S_ISDIR(st.st_mode):
        raise NotADirectoryError(f"{path} exists and is not a directory")
