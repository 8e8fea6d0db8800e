"""Download a corpus from the URLs on its card, verify it and unpack it (DESIGN §8, §10).

What a fetch guarantees, whatever the server sends and however an archive is built:

* **Nothing is written or linked outside the corpus folder** ``<data folder>/<card folder>``.
  Archives may hold only files and folders: a member with an absolute path or a ``..``
  component, a symbolic or hard link, or a device, fifo or other special file stops the
  extraction before anything is written. Links are refused rather than judged, because corpora
  need none and a link harmless where it is unpacked can point out of the folder once the
  archive's single top folder is stripped. Members are written by this module as plain files
  and folders into a temporary folder inside the corpus folder, checked, then moved into place;
  a link already in the corpus folder is never passed through (a link where a file goes is
  replaced by the file; a link where a folder goes stops the fetch before anything is moved).
* **Only complete downloads are installed.** Fewer bytes than the declared Content-Length, a
  chunked transfer cut short or any network error raise :class:`DataNotFoundError` and remove
  the temporary file. A download whose sha256, or whose files' sha256, the card knows is
  checked before it is moved into place; a file the card has no sha256 for is installed but
  listed in :attr:`FetchReport.unverified`, never as verified.
* **Limits**: an archive may unpack to at most :data:`MAX_UNPACKED_BYTES` in
  :data:`MAX_MEMBERS` members (``$TEXTCLUSTER_MAX_UNPACKED_MIB``, ``$TEXTCLUSTER_MAX_MEMBERS``,
  or the arguments of :func:`extract_archive`), checked on the headers before extracting and on
  the bytes written while extracting.
* **Clear errors**: a corrupt, truncated, encrypted or otherwise unreadable archive raises
  :class:`CorpusFormatError` naming the archive, the member when known, and what to do.
* **No leftovers**: one fetch at a time per corpus folder (the lock file ``.fetch.lock``, a
  ``flock`` the system releases when its holder dies); a fetch first removes the temporary
  files a killed one left behind (``.download-<hex>.part``, ``.extract-<hex>``).

Downloading, checksums and the lock are here; unpacking an archive is :mod:`._archive`'s
(:func:`extract_archive`, its limits and :class:`ArchiveLimitError` are also names of this
module).
"""

import http.client
import os
import secrets
import shutil
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from .. import __version__
from .._errors import DataNotFoundError, TextclusterError
from ..progress import Progress, progress_step
from ._archive import (  # extract_archive, its limits and its error are also fetch's names
    CHUNK, LOCK_NAME, MAX_MEMBERS, MAX_MEMBERS_ENV, MAX_UNPACKED_BYTES,
    MAX_UNPACKED_ENV, TEMPORARY as _TEMPORARY, ArchiveLimitError, extract_archive,
)
from .cards import Card, check_sha256
from .loaders._paths import StrPath, search_dirs

try:
    import fcntl
except ImportError:  # Windows: the lock file's age tells whether its fetch was killed
    fcntl = None  # type: ignore[assignment]

TIMEOUT = 60  # seconds without data before a download is given up
STALE_LOCK_SECONDS = 24 * 3600  # without fcntl, an older lock file was left by a killed fetch
BY_HAND = ("Check the network connection, or download the file by hand and put it in the "
           "corpus folder under --data-dir (see `textcluster corpora info NAME`).")


class FetchBusyError(TextclusterError):
    """Another fetch is writing to the same corpus folder."""


@dataclass
class FetchReport:
    """What :func:`fetch_corpus` did."""

    folder: Path
    downloaded: list[str] = field(default_factory=list)  # URLs
    installed: list[str] = field(default_factory=list)  # file names placed in the folder
    unverified: list[str] = field(default_factory=list)  # installed files without a sha256
    already_present: bool = False

    @property
    def verified(self) -> list[str]:
        """Installed files checked against a sha256 on the card."""
        return [name for name in self.installed if name not in self.unverified]


def fetch_corpus(card: Card, data_dir: StrPath | None = None, force: bool = False,
                 progress: Progress | None = None) -> FetchReport:
    """Download, verify and unpack ``card``'s corpus into ``<data folder>/<card.folder>``.

    The data folder is ``data_dir``, else ``$TEXTCLUSTER_DATA``, else the default one.
    Sources whose files are already there are skipped unless ``force``; a card without sources
    raises :class:`DataNotFoundError` saying where the files come from. ``progress(label,
    total)`` returns a context manager showing a download's progress (bytes). Another fetch
    into the same folder raises :class:`FetchBusyError`.
    """
    folder = search_dirs(data_dir)[0] / card.folder
    report = FetchReport(folder)
    if not force and len(card.present_files(folder)) == len(card.all_files):
        _remove_leftovers_if_free(folder)
        report.already_present = True
        return report
    if not card.sources:
        raise DataNotFoundError(
            f"corpus {card.name!r} cannot be downloaded: no published file reproduces "
            f"{', '.join(card.files)}, so its card lists no download. Put the files into "
            f"{folder} by hand; where they come from: {card.homepage} (and `textcluster corpora "
            f"info {card.name}`)"
        )
    created = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    try:
        with fetch_lock(folder):
            _remove_leftovers(folder)
            for source in card.sources:
                if force or _source_needed(card, source, folder):
                    _fetch_source(card, source, folder, report, progress)
    except BaseException:
        if created and not any(folder.iterdir()):
            folder.rmdir()
        raise
    missing = [name for name in card.files if card.find_file(folder, name) is None]
    if missing:
        raise DataNotFoundError(
            f"the downloads for corpus {card.name!r} did not provide {', '.join(missing)} in "
            f"{folder}; get the files by hand from {card.homepage}"
        )
    return report


def _source_needed(card, source, folder):
    """An archive is needed while any card file is missing; a single file while it is."""
    if source.is_archive:
        return len(card.present_files(folder)) < len(card.all_files)
    expected = card.expected_sha256(source.filename)
    name = expected[0] if expected else source.filename
    return card.find_file(folder, name) is None


def _fetch_source(card, source, folder, report, progress):
    tmp = download(source.url, folder, sha256=source.sha256, progress=progress)
    report.downloaded.append(source.url)
    try:
        if source.is_archive:
            names = extract_archive(tmp, folder, source.filename, verify=card)
        else:
            card.verify_file(tmp, source.filename, source.url)
            os.replace(tmp, folder / source.filename)
            names = [source.filename]
    finally:
        tmp.unlink(missing_ok=True)
    report.installed.extend(names)
    if not (source.sha256 and not source.is_archive):  # else the download itself was checked
        report.unverified.extend(n for n in names if _known_sha256(card, n) is None)


# -- one fetch at a time, and the leftovers of a killed one ---------------------------------------


@contextmanager
def fetch_lock(folder: StrPath) -> Iterator[None]:
    """Hold the lock of corpus folder ``folder`` for the ``with`` block; raises
    :class:`FetchBusyError` when another fetch holds it. The lock file is removed on exit."""
    path = Path(folder) / LOCK_NAME
    fd = _flock(path) if fcntl is not None else _lock_by_creation(path)
    try:
        yield
    finally:
        path.unlink(missing_ok=True)
        os.close(fd)


def _flock(path):
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise _busy(path) from None
        try:
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)  # its holder removed the file while we opened it: lock the new one


def _lock_by_creation(path):
    for _ in range(2):
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            try:
                age = time.time() - path.stat().st_mtime
            except FileNotFoundError:
                continue
            if age < STALE_LOCK_SECONDS:
                raise _busy(path) from None
            path.unlink(missing_ok=True)  # left by a fetch killed long ago
    raise _busy(path)


def _busy(path):
    return FetchBusyError(
        f"another `textcluster corpora fetch` is writing to {path.parent}; wait for it to "
        f"finish and try again (if none is running, remove {path})."
    )


def _remove_leftovers(folder):
    """Remove the temporary files of fetches into ``folder`` (call with the lock held)."""
    for path in folder.iterdir():
        if _TEMPORARY.fullmatch(path.name):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)


def _remove_leftovers_if_free(folder):
    """Remove leftovers from a folder nothing is fetched into, unless a fetch is running or the
    folder is read-only."""
    if folder.is_dir() and any(_TEMPORARY.fullmatch(p.name) for p in folder.iterdir()):
        try:
            with fetch_lock(folder):
                _remove_leftovers(folder)
        except (FetchBusyError, OSError):
            pass


# -- downloading ----------------------------------------------------------------------------------

# URLError, HTTPError, timeouts, resets, TLS errors; IncompleteRead and other protocol errors
_NETWORK_ERRORS = (OSError, http.client.HTTPException)


def download(url: str, folder: StrPath, sha256: str | None = None,
             progress: Progress | None = None) -> Path:
    """Download ``url`` completely into a temporary file in ``folder`` and return its path.

    A transfer shorter than its declared length or cut by a network error raises
    :class:`DataNotFoundError`; with ``sha256``, a file whose checksum differs raises
    :class:`CorpusFormatError`. Either way the temporary file is removed.
    """
    tmp = Path(folder) / f".download-{secrets.token_hex(8)}.part"
    try:
        with open(tmp, "xb") as out:  # (not mkstemp: the installed file keeps the umask's mode)
            _copy_url(url, out, progress)
        if sha256:
            check_sha256(tmp, sha256, f"the download {url}")
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def _copy_url(url, out, progress):
    request = urllib.request.Request(url, headers={"User-Agent": f"textcluster/{__version__}"})
    try:
        response = urllib.request.urlopen(request, timeout=TIMEOUT)
    except _NETWORK_ERRORS as exc:
        raise _network_error(url, exc) from None
    received = 0
    with response:
        total = _content_length(response)
        label = f"downloading {PurePosixPath(url).name}"
        with progress(label, total) if progress and total else nullcontext():
            while True:
                try:
                    block = response.read(CHUNK)
                except _NETWORK_ERRORS as exc:
                    raise _network_error(url, exc, received) from None
                if not block:
                    break
                out.write(block)  # (a full disk is not a network error: the OSError stands)
                received += len(block)
                progress_step(len(block))
    if total is not None and received < total:
        raise DataNotFoundError(
            f"could not download {url}: the transfer ended after {received:,} of {total:,} "
            f"bytes. Nothing was installed. Try again later. {BY_HAND}"
        )


def _network_error(url, exc, received=0):
    if isinstance(exc, urllib.error.HTTPError):
        return DataNotFoundError(f"could not download {url}: HTTP {exc.code} {exc.reason}. "
                                 f"{BY_HAND}")
    if isinstance(exc, http.client.IncompleteRead):
        reason = f"the transfer was cut after {received + len(exc.partial):,} bytes"
    elif isinstance(exc, urllib.error.URLError):
        reason = exc.reason
    else:
        reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return DataNotFoundError(f"could not download {url}: {reason}. Nothing was installed. "
                             f"{BY_HAND}")


def _content_length(response):
    try:
        return int(response.headers.get("Content-Length") or 0) or None
    except ValueError:
        return None


def _known_sha256(card, filename):
    expected = card.expected_sha256(filename)
    return expected[1] if expected else None
