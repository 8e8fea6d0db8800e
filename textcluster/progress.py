"""A progress hook the long loops call; the CLI points it at a progress bar."""

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import CancelledError
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar

# A progress display: ``progress(label, total)`` returns a context manager that shows the
# progress of a long stage while :func:`progress_step` reports its steps.
Progress = Callable[[str, int], AbstractContextManager]

_callback: ContextVar[Callable[[int], object] | None] = ContextVar("textcluster_progress",
                                                                   default=None)


def progress_step(n: int = 1) -> None:
    """Report ``n`` units of work done (a no-op unless a display is active)."""
    callback = _callback.get()
    if callback is not None:
        callback(n)


@contextmanager
def reporting_progress(callback: Callable[[int], object]) -> Iterator[None]:
    """Within the block, :func:`progress_step` calls ``callback(n)``."""
    token = _callback.set(callback)
    try:
        yield
    finally:
        _callback.reset(token)


@contextmanager
def stopping_on(event: threading.Event) -> Iterator[None]:
    """Within the block, :func:`progress_step` raises ``CancelledError`` once ``event`` is set,
    so that a loop run beside another stops at its next step when the work it belongs to has
    failed or was interrupted; until then the steps are reported as before."""
    outer = _callback.get()

    def step(n):
        if event.is_set():
            raise CancelledError("stopped: the fit it was part of has ended")
        if outer is not None:
            outer(n)

    with reporting_progress(step):
        yield
