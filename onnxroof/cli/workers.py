"""Many models in worker processes that may die: ``check --jobs N --timeout S``.

:class:`concurrent.futures.ProcessPoolExecutor` (what ``compare --jobs`` uses) breaks as a whole
when one worker dies, failing every model still queued, and cannot stop a task that runs too long.
Here each worker is a process that takes one item at a time over a pipe; the parent knows which
item each one holds, so a worker that dies (killed, out of memory, a crash in C++ code) or runs
over the time limit costs only its item: the item is reported as such, the worker is replaced
and the run goes on.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any


@dataclass
class Outcome:
    """What became of one item: ``result`` (what the function returned), or ``failure``, one line
    saying why there is none (``kind`` "timeout", "died", or "raised": the function raised, or
    its result could not be sent)."""

    item: Any
    result: Any = None
    failure: str | None = None
    kind: str = "done"  # done, timeout, died or raised
    seconds: float = 0.0


@dataclass
class _Worker:
    process: Any
    connection: Connection
    item: Any = None
    busy: bool = False
    started: float = field(default=0.0)


def run_in_workers(
    function: Callable[[Any], Any],
    items: Iterable[Any],
    jobs: int,
    timeout: float | None = None,
    initializer: Callable[[], None] | None = None,
) -> Iterator[Outcome]:
    """``function(item)`` for each item in up to ``jobs`` worker processes, yielded as each one
    finishes. A worker that ends without a result, or is still at its item ``timeout`` seconds
    after it took it (then it is killed), yields an Outcome with the ``failure`` and is replaced.
    ``function`` and the items must pickle; the function should return its errors as results:
    an exception it raises anyway reaches here as a "raised" failure, and the worker goes on.
    ``initializer`` runs in each worker as it starts (imports, plugins), before its clock does."""
    pending = deque(items)
    pool = _Pool(function, jobs, timeout, initializer)
    try:
        while pending or pool.busy():
            pool.hand_out(pending)
            yield from pool.collect()
    finally:
        pool.close()


class _Pool:
    """The worker processes of one :func:`run_in_workers`, and which item each one holds."""

    def __init__(
        self, function: Callable[[Any], Any], jobs: int, timeout: float | None, initializer: Callable[[], None] | None
    ):
        self.function, self.jobs, self.timeout, self.initializer = function, jobs, timeout, initializer
        self.context = multiprocessing.get_context()
        self.workers: list[_Worker] = []

    def busy(self) -> list[_Worker]:
        return [w for w in self.workers if w.busy]

    def start(self) -> _Worker:
        here, there = self.context.Pipe()
        process = self.context.Process(
            target=_serve, args=(there, self.function, self.initializer), daemon=True, name="onnxroof-worker"
        )
        process.start()
        there.close()
        worker = _Worker(process, here)
        self.workers.append(worker)
        try:  # ready: a fresh interpreter (spawn) imports before it counts against a time limit
            if here.poll(_START_S) and here.recv() == _READY:
                return worker
        except (EOFError, OSError):
            pass
        self.retire(worker)
        raise RuntimeError(ended(process.exitcode, "a worker process, starting,"))

    def retire(self, worker: _Worker) -> None:
        self.workers.remove(worker)
        worker.connection.close()
        if worker.process.is_alive():
            worker.process.kill()
        worker.process.join()

    def hand_out(self, pending: deque) -> None:
        """An item to each idle worker, and to new workers up to ``jobs``."""
        for worker in [w for w in self.workers if not w.busy and not w.process.is_alive()]:
            self.retire(worker)  # it ended after its last result: the next item goes to a new one
        while pending and (len(self.workers) < self.jobs or any(not w.busy for w in self.workers)):
            worker = next((w for w in self.workers if not w.busy), None) or self.start()
            worker.item, worker.busy, worker.started = pending.popleft(), True, time.monotonic()
            try:
                worker.connection.send(worker.item)
            except (BrokenPipeError, EOFError, OSError):  # it died before taking it: noticed below
                pass

    def collect(self) -> Iterator[Outcome]:
        """The outcomes of the items done (or over their time) once one is, or a deadline passes."""
        busy = self.busy()
        now = time.monotonic()
        deadlines = [w.started + self.timeout - now for w in busy] if self.timeout else []
        ready = wait(
            [w.connection for w in busy] + [w.process.sentinel for w in busy],
            timeout=max(0.0, min(deadlines)) if deadlines else None,
        )
        for worker in busy:
            outcome = self._outcome(worker, ready)
            if outcome is not None:
                worker.busy, worker.item = False, None
                yield outcome

    def _outcome(self, worker: _Worker, ready: list) -> Outcome | None:
        elapsed = time.monotonic() - worker.started
        if worker.connection in ready or worker.process.sentinel in ready:
            return self._received(worker, elapsed)
        if self.timeout and elapsed >= self.timeout:
            outcome = Outcome(
                worker.item,
                failure=f"over the time limit: not done in {self.timeout:g} s",
                kind="timeout",
                seconds=elapsed,
            )
            self.retire(worker)
            return outcome
        return None

    def _received(self, worker: _Worker, elapsed: float) -> Outcome:
        """What a worker that is ready sent: its result, the error it raised, or (it ended) why none."""
        try:
            if worker.connection.poll():
                received = worker.connection.recv()
                return (
                    Outcome(worker.item, failure=received.text, kind="raised", seconds=elapsed)
                    if isinstance(received, Raised)
                    else Outcome(worker.item, result=received, seconds=elapsed)
                )
        except (EOFError, OSError):
            pass
        # the sentinel, or a pipe closed: the process ended
        worker.process.join(timeout=5)
        outcome = Outcome(worker.item, failure=ended(worker.process.exitcode), kind="died", seconds=elapsed)
        self.retire(worker)
        return outcome

    def close(self) -> None:
        """An idle worker is told to stop (the pipe's end would not reach it while a worker forked
        later holds a copy of it); a busy one is killed."""
        for worker in self.workers:
            if worker.busy:
                worker.process.kill()
            else:
                try:
                    worker.connection.send(_STOP)
                except OSError:
                    pass
            worker.connection.close()
        for worker in self.workers:
            worker.process.join(timeout=5)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()


def ended(exitcode: int | None, who: str = "the worker process analysing it") -> str:
    """Why a worker ended without a result, in words."""
    if exitcode is None:
        return f"{who} stopped answering"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        oom = " (out of memory?)" if name == "SIGKILL" else ""
        return f"{who} was killed by {name}{oom} before it finished"
    return f"{who} ended (exit code {exitcode}) before it finished"


@dataclass
class Raised:
    """What a worker sends instead of a result when the function raised (or its result would not
    pickle): the exception in one line."""

    text: str

    @classmethod
    def of(cls, exc: BaseException) -> Raised:
        return cls(f"{type(exc).__name__}: {exc}")


_READY, _STOP = "ready", None
_START_S = 120.0  # a worker that has not started by then is not going to


def _serve(connection: Connection, function: Callable[[Any], Any], initializer: Callable[[], None] | None) -> None:
    """A worker: items in, results out, until the parent closes the pipe. Ctrl-C is the parent's
    to handle (it stops the workers); the collector runs, since a worker lives for many items."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.enable()
    if initializer is not None:
        initializer()
    connection.send(_READY)
    while True:
        try:
            item = connection.recv()
        except (EOFError, OSError):
            break
        if item is _STOP:
            break
        try:
            result = function(item)
        except BaseException as exc:  # an error (or a sys.exit) is this item's, not the worker's end
            result = Raised.of(exc)
        try:
            connection.send(result)
        except (BrokenPipeError, OSError):  # the parent is gone
            break
        except Exception as exc:  # the result does not pickle: the item's failure
            try:
                connection.send(Raised.of(exc))
            except OSError:
                break
    connection.close()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
