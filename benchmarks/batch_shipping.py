"""What carrying a client process's batch lines to the coordinator costs, per Dask facility
(docs/scaling.md, "Batch lines from the client processes").

A Dask worker process hosts an actor whose producer thread makes batches at a fixed rate
(each: a few figures and its latency marks, ``--batch-size`` + 1 int64 stamps), as a
client process's phase would. The batches are shipped every ``--interval`` seconds by one
of the carriers below, or not at all (the baseline). Reported per carrier, the medians of
``--rounds`` interleaved rounds: the client process's extra CPU per batch shipped (its
process CPU against the baseline's) and how late a batch reaches the coordinator (from the
batch's end to its arrival: the wait for the next shipment plus the trip).

- ``log_event``: ``Worker.log_event(topic, msg)`` from the worker's loop; the coordinator
  subscribes with ``Client.subscribe_topic`` (the scheduler forwards it; it also keeps the
  last ``distributed.admin.low-level-log-length`` events of the topic).
- ``queue``: ``distributed.Queue.put`` from the worker; the coordinator ``get(batch=True)``
  in a loop (both through the scheduler, one RPC per put).
- ``actor``: the coordinator calls the actor's ``drain()`` every interval (a direct
  coordinator-to-worker call; nothing passes through the scheduler).

    python benchmarks/batch_shipping.py --rate 40 --seconds 4 --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import threading
import time
from typing import Any

import numpy as np

CARRIERS = ("none", "log_event", "queue", "actor")
TOPIC = "asyncbench-batch-shipping"


class Producer:
    """The Dask actor: makes batches in a thread (the benchmark's loop stands in) and ships them."""

    def __init__(self) -> None:
        self.pending: list[tuple[Any, ...]] = []
        self.made = 0

    async def run(self, carrier: str, rate: float, seconds: float, batch: int, interval: float) -> float:
        """Produce for ``seconds``; returns this process's CPU seconds over it."""
        from distributed import Queue, get_worker

        worker = get_worker()
        queue = Queue(TOPIC) if carrier == "queue" else None
        stop = threading.Event()

        def produce() -> None:
            t0 = time.perf_counter()
            k = 0
            while not stop.is_set():
                due = t0 + k / rate
                now = time.perf_counter()
                if due > now:
                    time.sleep(due - now)
                marks = np.cumsum(np.full(batch + 1, 30_000, dtype=np.int64)) + time.perf_counter_ns()
                self.pending.append((0, k, batch, 0.03, time.time(), marks.tobytes()))
                self.made += 1
                k += 1

        cpu0 = time.process_time()
        thread = threading.Thread(target=produce)
        thread.start()
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            await asyncio.sleep(interval)
            if carrier in ("none", "actor"):
                if carrier == "none":
                    self.pending = []
                continue
            out, self.pending = self.pending, []
            if not out:
                continue
            msg = [list(b) for b in out]
            if carrier == "log_event":
                worker.log_event(TOPIC, msg)
            else:
                assert queue is not None
                await queue.put(msg)
        stop.set()
        thread.join()
        return time.process_time() - cpu0

    async def drain(self) -> list[tuple[Any, ...]]:
        out, self.pending = self.pending, []
        return out

    async def made_count(self) -> int:
        return self.made


async def one(client: Any, actor: Any, carrier: str, args: argparse.Namespace) -> dict[str, Any]:
    from distributed import Queue

    delays: list[float] = []
    received = 0

    def take(batches: list[Any]) -> None:
        nonlocal received
        now = time.time()
        for b in batches:
            delays.append(now - b[4])
            received += 1

    if carrier == "log_event":
        client.subscribe_topic(TOPIC, lambda event: take(event[1]))
    queue = Queue(TOPIC, client=client) if carrier == "queue" else None  # before the producer's first put
    made0 = await actor.made_count()
    running = asyncio.ensure_future(actor.run(carrier, args.rate, args.seconds, args.batch_size, args.interval))
    if queue is not None:
        while not running.done() or await queue.qsize():
            with contextlib.suppress(TimeoutError):
                take(await queue.get(timeout=args.interval))
    elif carrier == "actor":
        while not running.done():
            await asyncio.sleep(args.interval)
            take(await actor.drain())
    cpu = await running
    await asyncio.sleep(0.5)
    if carrier == "actor":
        take(await actor.drain())
    if carrier == "log_event":
        client.unsubscribe_topic(TOPIC)
    made = await actor.made_count() - made0
    return {
        "carrier": carrier,
        "batches": made,
        "received": received if carrier != "none" else None,
        "cpu_s": cpu,
        "delay_p50_ms": round(statistics.median(delays) * 1e3, 1) if delays else None,
        "delay_p99_ms": round(float(np.percentile(delays, 99)) * 1e3, 1) if delays else None,
        "delay_max_ms": round(max(delays) * 1e3, 1) if delays else None,
    }


async def main_async(args: argparse.Namespace) -> None:
    from distributed import Client, LocalCluster

    async with (
        LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                     dashboard_address=None, asynchronous=True) as cluster,
        Client(cluster, asynchronous=True) as client,
    ):
        actor = await client.submit(Producer, actor=True)
        rows: dict[str, list[dict[str, Any]]] = {c: [] for c in CARRIERS}
        for r in range(args.rounds):
            for carrier in CARRIERS:
                row = await one(client, actor, carrier, args)
                rows[carrier].append(row)
                print(json.dumps({"round": r, **row}), flush=True)
        base = statistics.median(r["cpu_s"] / r["batches"] for r in rows["none"])
        for carrier in CARRIERS[1:]:
            per = statistics.median(r["cpu_s"] / r["batches"] for r in rows[carrier])
            print(json.dumps({
                "carrier": carrier,
                "extra_cpu_us_per_batch": round((per - base) * 1e6, 1),
                "delay_p50_ms": statistics.median(r["delay_p50_ms"] for r in rows[carrier]),
                "delay_p99_ms": statistics.median(r["delay_p99_ms"] for r in rows[carrier]),
                "delay_max_ms": max(r["delay_max_ms"] for r in rows[carrier]),
                "lost": sum(r["batches"] - r["received"] for r in rows[carrier]),
            }), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rate", type=float, default=40.0, help="batches per second")
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--batch-size", type=int, default=1000)
    ap.add_argument("--interval", type=float, default=0.1, help="seconds between shipments")
    ap.add_argument("--rounds", type=int, default=3)
    asyncio.run(main_async(ap.parse_args()))


if __name__ == "__main__":
    main()
