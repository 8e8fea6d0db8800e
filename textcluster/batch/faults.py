"""A hook for the fault-injection tests (``tests/test_batch_faults.py``), inert unless the
environment variable ``TEXTCLUSTER_FAULT`` is set.

``TEXTCLUSTER_FAULT="point:n[:action][,point:n[:action]...]"`` makes the ``n``-th pass of a
named point in each process fail: ``kill`` (SIGKILL at once, the default), ``enospc`` (raise
the OSError of a full disk), or a number of seconds (SIGKILL after that delay, from another
thread, so the process is killed while it goes on).

Points: ``ledger-write`` (a result written in the ledger's transaction, not committed yet),
``clusters-write`` (before a job's clusters file), ``result`` (a result received, before it
is stored), ``job`` (a job starts in its worker), ``pool-start`` (the worker pool was given
its first jobs) and ``report`` (the report starts).
"""

import errno
import os
import signal
import threading

VARIABLE = "TEXTCLUSTER_FAULT"
_passes: dict[str, int] = {}  # point -> passes in this process


def fault_point(name):
    """Fail here if ``$TEXTCLUSTER_FAULT`` says so (see the module's docstring)."""
    spec = os.environ.get(VARIABLE)
    if not spec:
        return
    _passes[name] = _passes.get(name, 0) + 1
    for fault in spec.split(","):
        point, _, rest = fault.partition(":")
        count, _, action = rest.partition(":")
        if point == name and int(count) == _passes[name]:
            _fail(name, action or "kill")


def _fail(name, action):
    if action == "enospc":
        raise OSError(errno.ENOSPC, f"{os.strerror(errno.ENOSPC)} (injected at {name})")
    if action == "kill":
        _kill()
    timer = threading.Timer(float(action), _kill)
    timer.daemon = True
    timer.start()


def _kill():
    os.kill(os.getpid(), getattr(signal, "SIGKILL", signal.SIGTERM))
