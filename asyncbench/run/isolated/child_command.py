"""The command line that starts an isolated engine's process, with SIGINT ignored until the
child's own code takes it.

Why: Ctrl-C reaches the whole process group. A SIGINT that lands while the child's
interpreter is still starting (importing ``site`` and the package: 20 ms on a quiet
machine, over 400 ms on a loaded one) raised ``KeyboardInterrupt`` before any code of the
child ran, and printed ``Fatal Python error: init_import_site`` and a traceback (issue 52
item 7). The parent owns interrupt handling (it stops its children with SIGTERM, then
SIGKILL), so the child starts with SIGINT ignored: ``/bin/sh`` sets it to ignored and
``exec``\\ s Python (an ignored signal stays ignored across ``exec``, and Python installs its
own SIGINT handler only over the default). The child's first lines
(:data:`asyncbench.run.child.EARLY_SIGNALS`) then take SIGINT back, record any that come
during its imports, and handle them once its stop handlers are in place.

The child runs with ``-P`` (Python 3.11+: no unsafe path first on ``sys.path``): ``-m``
otherwise puts the working directory first, so a run started in a folder holding an
``asyncbench/`` checkout, or any file named like a module the child imports
(``orjson.py``), ran that code in every engine's process instead of the installed one.

What is left: a SIGINT in the shell's first instructions, before its ``trap``, ends it
quietly (the default action: no traceback); one while SIGINT is ignored is dropped by
the child, and the parent, which got the same Ctrl-C, stops it. The ``libuv`` process
spawn the event loop uses resets signal dispositions and the signal mask in the new
process, so neither can be handed over from the parent: the shell sets it after the spawn.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

__all__ = ["child_command"]

#: ``sh -c SCRIPT python ARGS...``: the script ignores SIGINT and replaces itself with
#: ``"$0" "$@"`` (python and its arguments, passed as arguments: nothing is quoted into it).
IGNORE_SIGINT_THEN_EXEC = 'trap "" INT; exec "$0" "$@"'


def child_command(args: Sequence[str]) -> list[str]:
    """``python -P -m asyncbench.run.child ARGS``, started with SIGINT ignored (the module's
    docstring) where there is a POSIX shell; as it is elsewhere."""
    python = [sys.executable, "-P", "-m", "asyncbench.run.child", *args]
    if os.name != "posix" or not os.path.exists("/bin/sh"):
        return python
    return ["/bin/sh", "-c", IGNORE_SIGINT_THEN_EXEC, *python]
