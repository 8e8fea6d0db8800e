"""Errors a user can act on.

Every error raised for bad input derives from :class:`TextclusterError`; the CLI turns it into a
one-paragraph message and a non-zero exit code instead of a traceback.
"""


class TextclusterError(Exception):
    """Base class of errors caused by input the user can fix (data, names, parameters)."""


class DataNotFoundError(TextclusterError, FileNotFoundError):
    """A corpus' files were not found where textcluster looked."""


class CorpusFormatError(TextclusterError, ValueError):
    """A corpus file exists but cannot be parsed (corrupt, truncated, wrong format)."""


class InvalidInputError(TextclusterError, ValueError):
    """Data or parameters that a model or a stage cannot work with."""


class MissingDependencyError(TextclusterError, ImportError):
    """A feature needs an optional package that is not installed; the message names the extra
    that installs it (``pip install 'textcluster[plots]'``)."""


class BundleError(TextclusterError, ValueError):
    """A saved model bundle that cannot be used: a file missing, altered since it was written
    (a checksum does not match), or written by a textcluster whose format this one cannot
    read; the message says what to do."""
