"""CPU seconds of a piece of work, as the scale tests compare them: time.process_time (other load on the
machine does not count), the least of a few runs (noise only ever adds CPU), and with the heap that was
there before frozen out of the garbage collector's reach.

Why the freeze: a long pytest session holds every earlier test's objects, and each full collection the
work triggers scans them all, a cost that grows with the session, not with the work. Two ratio tests read it
as growth on CI: 50 to 200 hosts 6.3x (3x alone), 10,000 to 100,000 host names 35x (about 12x alone).
A run of the CLI has only its own heap; freezing gives the measurement the same."""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

T = TypeVar("T")


@contextlib.contextmanager
def own_heap() -> Iterator[None]:
    """The objects alive now are left out of every collection until the block ends."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def cpu_of(work: Callable[[], T]) -> tuple[float, T]:
    """(CPU seconds, result) of one run of ``work`` on its own heap."""
    with own_heap():
        began = time.process_time()
        result = work()
        return time.process_time() - began, result


def least_cpu_s(work: Callable[[], object], repeat: int = 3) -> float:
    """The least CPU seconds of ``repeat`` runs of ``work``, each on its own heap."""
    return min(cpu_of(work)[0] for _ in range(repeat))
