"""What the client/server engines (mysql, postgres) share: endpoints, how workers are
spread over them, per-node facts.

A client/server engine (mysql, postgres) may be given several endpoints, the SQL ports of
the nodes of a multi-primary cluster (Galera) or of anything else that accepts the same
writes. Worker ``w`` of ``P`` then connects to endpoint ``w % K``: round-robin, so with
``P = K`` every node takes one worker's writes and reads, and the assignment is a pure
function of ``w`` (a report, or a second process running other workers, can recompute it).

Written once here so both engines parse ``host:port`` lists, and state the assignment
and per-node facts, the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Endpoint",
    "assign",
    "hybridmethod",
    "parse_endpoint",
    "parse_endpoints",
    "summarize",
    "worker_map",
]


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def _port(text: str, what: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise ValueError(f"{what}: port must be an integer, got {text!r}") from None
    if not 0 < port < 65536:
        raise ValueError(f"{what}: port must be between 1 and 65535, got {port}")
    return port


def parse_endpoint(text: str, default_port: int) -> Endpoint:
    """``host``, ``host:port`` or ``[ipv6]:port``; the port defaults to ``default_port``."""
    item = text.strip()
    if not item:
        raise ValueError("empty endpoint")
    if item.startswith("["):  # [::1]:5432
        host, sep, rest = item[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            raise ValueError(f"endpoint {text!r}: expected [address]:port")
        return Endpoint(host, _port(rest[1:], f"endpoint {text!r}") if rest else default_port)
    if item.count(":") == 1:
        host, _, port = item.partition(":")
        if not host:
            raise ValueError(f"endpoint {text!r}: no host")
        return Endpoint(host, _port(port, f"endpoint {text!r}"))
    return Endpoint(item, default_port)  # a bare host (or a bare IPv6 address)


def parse_endpoints(items: str | Sequence[str], default_port: int) -> list[Endpoint]:
    """A comma list or a list of endpoints, in order (duplicates kept: they are deliberate)."""
    parts = items.split(",") if isinstance(items, str) else list(items)
    if not all(isinstance(p, str) for p in parts):
        raise ValueError(f"endpoints must be strings like 'host:port', got {items!r}")
    out = [parse_endpoint(p, default_port) for p in parts]
    if not out:
        raise ValueError("no endpoints given")
    return out


def assign(workers: int, endpoints: int) -> list[int]:
    """Endpoint index of each worker: round-robin, worker ``w`` -> ``w % endpoints``."""
    return [w % endpoints for w in range(workers)]


def worker_map(workers: int, endpoints: Sequence[Endpoint]) -> str:
    """Where each worker connected, e.g. ``workers 0, 3 -> 127.0.0.1:3307; worker 1 -> ...``."""
    by_endpoint: dict[int, list[int]] = {}
    for w, e in enumerate(assign(workers, len(endpoints))):
        by_endpoint.setdefault(e, []).append(w)
    parts = []
    for e, endpoint in enumerate(endpoints):
        ws = by_endpoint.get(e, [])
        if not ws:
            parts.append(f"no worker -> {endpoint}")
        else:
            label = "worker" if len(ws) == 1 else "workers"
            parts.append(f"{label} {', '.join(map(str, ws))} -> {endpoint}")
    return "; ".join(parts)


def summarize(per_node: Mapping[str, str | None]) -> str:
    """One value when every node agrees, else ``value (node), ...``; unknowns say so."""
    values = {v for v in per_node.values()}
    if len(values) == 1:
        (value,) = values
        return "unknown" if value is None else value
    return ", ".join(f"{'unknown' if v is None else v} ({node})" for node, v in per_node.items())


class hybridmethod:
    """A method callable on the class (before open) and on an instance (knows more after
    open, e.g. the server versions): ``library_versions`` of a client/server engine."""

    def __init__(self, func: Callable[..., Any]) -> None:
        self.func = func

    def __get__(self, obj: object, owner: type) -> Callable[[], Any]:
        target = owner if obj is None else obj
        return lambda: self.func(target)
