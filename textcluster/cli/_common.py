"""Options and error handling shared by the commands."""

import functools
import sys
import threading
import warnings

import click
from sklearn.exceptions import ConvergenceWarning

from .._compat import InvalidParameterError
from .._errors import TextclusterError
from ..models import candidate_range
from ..progress import reporting_progress


def data_dir_option(func):
    return click.option(
        "--data-dir", type=click.Path(file_okay=False), default=None,
        help="Folder holding the corpora (default: $TEXTCLUSTER_DATA, then corpora/).",
    )(func)


class InputError(click.ClickException):
    """Bad input (data, names, parameters): a message and exit code 2, like a usage error."""

    exit_code = 2


def show_warning(message, category, filename, lineno, file=None, line=None):
    """A warning as one line, ``warning: ...``, without the source line that raised it."""
    click.echo(f"warning: {message}", err=True)


def user_errors(func):
    """Turn input errors into a clear message and exit code 2 (1 for other failures), and
    warnings into one line each."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                warnings.showwarning = show_warning
                return func(*args, **kwargs)
        except (TextclusterError, InvalidParameterError) as exc:
            raise InputError(str(exc)) from None
        except MemoryError:
            raise click.ClickException(
                "out of memory; try a smaller corpus selection, fewer clusters or float32 "
                "(--set dtype=float32)"
            ) from None
        except FloatingPointError as exc:
            raise click.ClickException(f"numerical failure: {exc}") from None
        except OSError as exc:  # e.g. an output folder that cannot be created
            where = f": {exc.filename}" if exc.filename else ""
            raise click.ClickException(f"{exc.strerror or exc}{where}") from None

    return wrapper


class ProgressBar:
    """A click progress bar on an interactive terminal; silent in logs and pipes."""

    def __init__(self, label, total):
        self.total, self.label = total, label
        self.bar = None
        self._lock = threading.Lock()  # loops run beside one another report to one bar

    def _step(self, n):
        if self.bar is not None:
            with self._lock:
                self.bar.update(n)

    def __enter__(self):
        if sys.stderr.isatty():
            self.bar = click.progressbar(length=self.total, label=self.label, file=sys.stderr)
            self.bar.__enter__()
        self._ctx = reporting_progress(self._step)
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc):
        self._ctx.__exit__(*exc)
        if self.bar is not None:
            self.bar.__exit__(*exc)
        return False


class ClusterCountParam(click.ParamType):
    """``--k``: a number of clusters ≥ 1, ``auto`` or a range ``MIN:MAX`` to choose it in."""

    name = "K|auto|MIN:MAX"

    def convert(self, value, param, ctx):
        text = str(value).strip()
        if text.isdigit() and int(text) >= 1:
            return int(text)
        try:
            candidate_range(text)
            return text
        except TextclusterError:
            self.fail(f"{value!r} is not a number of clusters ≥ 1, 'auto' or a range MIN:MAX "
                      "(1 ≤ MIN < MAX)", param, ctx)
