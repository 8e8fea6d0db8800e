"""Refuse work whose dense matrices would not fit in memory, before allocating them.

Models that keep n × n matrices (a learned graph, a kernel) call :func:`require_memory` with
what they are about to allocate; the error says how much is needed, how much is available and
what to do instead, rather than letting the machine swap or the process be killed.
"""

import os
from pathlib import Path

from .._errors import InvalidInputError

MEMORY_ENV = "TEXTCLUSTER_MEMORY_LIMIT"  # e.g. "8G": cap what textcluster may plan to use
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


class InsufficientMemoryError(InvalidInputError, MemoryError):
    """The dense matrices a model needs would not fit in the memory available."""


def parse_size(text):
    """Bytes from ``"123"``, ``"512M"``, ``"8G"`` (binary units; a trailing ``B`` is allowed)."""
    value = str(text).strip().upper().removesuffix("B").removesuffix("I")
    unit = value[-1:] if value[-1:] in _UNITS else ""
    try:
        return int(float(value[: len(value) - len(unit)]) * _UNITS[unit])
    except ValueError:
        raise InvalidInputError(
            f"${MEMORY_ENV}={text!r} is not a size; write e.g. 8G or 512M"
        ) from None


def available_memory():
    """Bytes this process can still allocate: ``$TEXTCLUSTER_MEMORY_LIMIT`` if set, else the
    smaller of the system's available memory and the room left under a cgroup limit."""
    if os.environ.get(MEMORY_ENV):
        return parse_size(os.environ[MEMORY_ENV])
    candidates = [_meminfo_available(), _cgroup_room()]
    known = [c for c in candidates if c is not None]
    return min(known) if known else None


def _meminfo_available():
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _cgroup_room():
    base = Path("/sys/fs/cgroup")
    try:
        limit = (base / "memory.max").read_text().strip()
        if limit == "max":
            return None
        return int(limit) - int((base / "memory.current").read_text().strip())
    except (OSError, ValueError):
        return None


def format_bytes(n):
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1024 or unit == "TB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024


def dense_bytes(n_rows, n_cols, itemsize, count=1):
    """Bytes of ``count`` dense ``n_rows × n_cols`` arrays of ``itemsize``-byte numbers."""
    return int(count) * int(n_rows) * int(n_cols) * int(itemsize)


def memory_fits(needed):
    """Whether ``needed`` bytes are available (:func:`available_memory`; unknown: yes)."""
    available = available_memory()
    return available is None or needed <= available


def require_memory(needed, what, advice):
    """Raise :class:`InsufficientMemoryError` if ``needed`` bytes are not available.

    ``what`` names the allocation (``"AGPNMF's 4 dense 9,494 × 9,494 float64 matrices"``);
    ``advice`` says what to do instead.
    """
    if memory_fits(needed):
        return
    available = available_memory()
    raise InsufficientMemoryError(
        f"{what} need about {format_bytes(needed)}, but only {format_bytes(available)} of memory "
        f"is available. {advice} (Set ${MEMORY_ENV} to change the limit textcluster plans for.)"
    )
