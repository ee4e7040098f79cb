"""Names from a plan, a flag or the environment that end up inside SQL text: checked when
the plan is read, and quoted where they are used.

A database or schema name cannot be a bound parameter (``CREATE DATABASE $1`` does not
exist), so the engines put it into the statement's text. Issue 34: ``[engines.mysql]
database = "asyncbench_nx`;DROP DATABASE asyncbench_victim;#"`` ended the engine's
back-quoted name early and dropped the user's database. Two defences, each enough alone:

- **A strict pattern**, checked with the engine's settings before anything runs
  (:func:`check_name`): ASCII letters, digits and ``_``, starting with a letter or ``_``,
  at most :data:`MAX_LENGTH` characters (PostgreSQL's identifier limit; MySQL's is 64).
  Such a name means the same thing quoted or not, on both servers, in every case setting.
- **The server's own quoting** at every use (:func:`mysql_ident`, :func:`pg_ident`), so
  a value that bypassed the check (a test, a future caller) is still one identifier.
"""

from __future__ import annotations

import re

__all__ = ["MAX_LENGTH", "RULE", "check_name", "mysql_ident", "pg_ident"]

MAX_LENGTH = 63
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: What a name may be, as the refusal states it.
RULE = f"1 to {MAX_LENGTH} ASCII letters, digits or underscores, starting with a letter or underscore"


def check_name(value: object, what: str) -> str:
    """``value`` when it is a plain SQL name (module docstring); else ValueError starting
    with ``what`` (the setting or the variable it came from)."""
    if not isinstance(value, str) or not _NAME.fullmatch(value) or len(value) > MAX_LENGTH:
        raise ValueError(f"{what} must be a plain name ({RULE}), got {value!r}")
    return value


def _no_nul(name: str) -> str:
    if "\x00" in name:  # no server accepts it in a name, and a C string would end there
        raise ValueError(f"an SQL name cannot contain a NUL character: {name!r}")
    return name


def mysql_ident(name: str) -> str:
    """``name`` as one MySQL/MariaDB identifier: in backticks, each backtick doubled."""
    return "`" + _no_nul(name).replace("`", "``") + "`"


def pg_ident(name: str) -> str:
    """``name`` as one PostgreSQL identifier: in double quotes, each double quote doubled
    (what libpq's ``PQescapeIdentifier`` does; asyncpg has no public helper)."""
    return '"' + _no_nul(name).replace('"', '""') + '"'
