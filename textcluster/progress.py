"""A progress hook the long loops call; the CLI points it at a progress bar."""

from contextlib import contextmanager
from contextvars import ContextVar

_callback = ContextVar("textcluster_progress", default=None)


def progress_step(n=1):
    """Report ``n`` units of work done (a no-op unless a display is active)."""
    callback = _callback.get()
    if callback is not None:
        callback(n)


@contextmanager
def reporting_progress(callback):
    """Within the block, :func:`progress_step` calls ``callback(n)``."""
    token = _callback.set(callback)
    try:
        yield
    finally:
        _callback.reset(token)
