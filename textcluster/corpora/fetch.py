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
"""

import errno
import http.client
import lzma
import os
import re
import secrets
import shutil
import stat
import tarfile
import time
import urllib.error
import urllib.request
import zipfile
import zlib
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from .. import __version__
from .._errors import CorpusFormatError, DataNotFoundError, InvalidInputError, TextclusterError
from .cards import file_sha256
from .loaders._paths import search_dirs
from ..progress import progress_step

try:
    import fcntl
except ImportError:  # Windows: the lock file's age tells whether its fetch was killed
    fcntl = None

CHUNK = 1 << 16
TIMEOUT = 60  # seconds without data before a download is given up
# The largest archive on the cards, reuters21578.tar.gz, unpacks to 28.0 MB in 31 files: the
# limits leave room for corpora about nine times larger, and stop archive bombs.
MAX_UNPACKED_BYTES = 256 << 20
MAX_MEMBERS = 10_000
MAX_UNPACKED_ENV = "TEXTCLUSTER_MAX_UNPACKED_MIB"
MAX_MEMBERS_ENV = "TEXTCLUSTER_MAX_MEMBERS"
LOCK_NAME = ".fetch.lock"
STALE_LOCK_SECONDS = 24 * 3600  # without fcntl, an older lock file was left by a killed fetch
# (also the ``.extract-`` folders of mkdtemp, 8 characters, that earlier versions made)
_TEMPORARY = re.compile(r"\.download-[0-9a-f]{16}\.part|\.extract-(?:[0-9a-f]{16}|[a-z0-9_]{8})")
BY_HAND = ("Check the network connection, or download the file by hand and put it in the "
           "corpus folder under --data-dir (see `textcluster corpora info NAME`).")
FETCH_AGAIN = ("Run `textcluster corpora fetch NAME --force` to download it again, or download "
               "and unpack it by hand into the corpus folder (see `textcluster corpora info "
               "NAME`).")


class ArchiveLimitError(CorpusFormatError):
    """An archive would unpack to more bytes or members than the limits allow."""


class FetchBusyError(TextclusterError):
    """Another fetch is writing to the same corpus folder."""


@dataclass
class FetchReport:
    """What :func:`fetch_corpus` did."""

    folder: Path
    downloaded: list = field(default_factory=list)  # URLs
    installed: list = field(default_factory=list)  # file names placed in the folder
    unverified: list = field(default_factory=list)  # installed files without a known sha256
    already_present: bool = False

    @property
    def verified(self) -> list:
        """Installed files checked against a sha256 on the card."""
        return [name for name in self.installed if name not in self.unverified]


def fetch_corpus(card, data_dir=None, force=False, progress=None) -> FetchReport:
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
            _verify_card_file(card, tmp, source.filename, source.url)
            os.replace(tmp, folder / source.filename)
            names = [source.filename]
    finally:
        tmp.unlink(missing_ok=True)
    report.installed.extend(names)
    if not (source.sha256 and not source.is_archive):  # else the download itself was checked
        report.unverified.extend(n for n in names if _known_sha256(card, n) is None)


# -- one fetch at a time, and the leftovers of a killed one ---------------------------------------


@contextmanager
def fetch_lock(folder):
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


def download(url, folder, sha256=None, progress=None) -> Path:
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


def check_sha256(path, expected, what, decompress=False) -> None:
    """Raise :class:`CorpusFormatError` when the sha256 of ``path`` is not ``expected``."""
    actual = file_sha256(path, decompress=decompress)
    if actual != expected:
        raise CorpusFormatError(
            f"checksum mismatch for {what}: sha256 {actual}, expected {expected}. The file was "
            f"not installed. The download may be corrupt or the source may have changed: try "
            f"again, or check the file by hand."
        )


def _known_sha256(card, filename):
    expected = card.expected_sha256(filename)
    return expected[1] if expected else None


def _verify_card_file(card, path, filename, origin):
    """Check ``path`` (stored as ``filename``) against the card's checksum, when it has one."""
    expected = card.expected_sha256(filename)
    if expected and expected[1]:
        check_sha256(path, expected[1], f"{filename} from {origin}", decompress=expected[2])


# -- archives -------------------------------------------------------------------------------------

_ZIP_METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}
# What the standard library raises on a damaged archive (BadGzipFile is an OSError).
_READ_ERRORS = (tarfile.TarError, zipfile.BadZipFile, zipfile.LargeZipFile, EOFError,
                zlib.error, lzma.LZMAError, OSError, ValueError, RuntimeError,
                NotImplementedError)
# Writing a member fails with these when two members clash (a file and a folder of one name)
# or a name is not valid here; other errors (a full disk) are the system's to report.
_CLASHES = {errno.EEXIST, errno.ENOTDIR, errno.EISDIR, errno.ENAMETOOLONG, errno.EINVAL,
            errno.EILSEQ}


@dataclass
class _Entry:
    """An archive member as its header describes it."""

    name: str  # as in the archive
    path: PurePosixPath  # where it goes, relative to the extraction folder
    is_dir: bool
    size: int  # declared
    info: object  # its TarInfo or ZipInfo


def extract_archive(archive, folder, name=None, verify=None, max_bytes=None,
                    max_members=None) -> list:
    """Extract ``archive`` safely into ``folder``; returns the paths placed there.

    Every member is checked first and the limits are applied (see the module docstring); the
    members are extracted into a temporary folder inside ``folder``, a single top-level folder
    is stripped, files the card ``verify`` knows are checked against its sha256, and only then
    moved into place. ``name`` (default: the file's) decides the format: ``.zip`` or a tar.
    ``max_bytes`` and ``max_members`` default to ``$TEXTCLUSTER_MAX_UNPACKED_MIB`` (in MiB) and
    ``$TEXTCLUSTER_MAX_MEMBERS``, else :data:`MAX_UNPACKED_BYTES` and :data:`MAX_MEMBERS`.
    """
    archive, folder = Path(archive), Path(folder)
    name = name or archive.name
    max_bytes = _limit(max_bytes, MAX_UNPACKED_ENV, MAX_UNPACKED_BYTES, 1 << 20)
    max_members = _limit(max_members, MAX_MEMBERS_ENV, MAX_MEMBERS, 1)
    staging = folder / f".extract-{secrets.token_hex(8)}"
    staging.mkdir()
    try:
        if name.lower().endswith(".zip"):
            _extract_zip(archive, staging, name, max_bytes, max_members)
        else:
            _extract_tar(archive, staging, name, max_bytes, max_members)
        root = _strip_single_directory(staging)
        if verify is not None:
            _verify_extracted(verify, root, name)
        return _move_tree(root, folder, name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _limit(value, variable, default, unit):
    if value is not None:
        return int(value)
    text = os.environ.get(variable, "").strip()
    if not text:
        return default
    if not text.isdigit() or int(text) == 0:
        what = "MiB" if unit > 1 else "members"
        raise InvalidInputError(f"${variable} must be a positive whole number ({what}), got "
                                f"{text!r}; unset it for the default, {default // unit:,}")
    return int(text) * unit


def _extract_tar(archive, staging, name, max_bytes, max_members):
    with _reading(name):
        tar = tarfile.open(archive)
    with tar:
        with _reading(name):  # a pass over the headers, stopped at the first limit exceeded
            entries = _declared(_tar_entries(tar, name), name, max_bytes, max_members)
        _write_members(entries, tar.extractfile, staging, name, max_bytes)
        with _reading(name):  # the rest of the stream: a gzip, bzip2 or xz checksum is at its end
            left = max_bytes
            while left > 0 and (block := tar.fileobj.read(min(CHUNK, left))):
                left -= len(block)


def _tar_entries(tar, archive_name):
    for info in tar:  # reads the headers only
        if info.issym():
            raise _unsafe(archive_name, info.name, f"is a symbolic link (to {info.linkname!r})")
        if info.islnk():
            raise _unsafe(archive_name, info.name, f"is a hard link (to {info.linkname!r})")
        if not (info.isreg() or info.isdir()):
            raise _unsafe(archive_name, info.name, "is a device, fifo or other special file")
        yield _entry(info.name, info.isdir(), info.size, info, archive_name)


def _extract_zip(archive, staging, name, max_bytes, max_members):
    with _reading(name):
        zf = zipfile.ZipFile(archive)
    with zf:
        entries = _declared(_zip_entries(zf, name), name, max_bytes, max_members)
        _write_members(entries, zf.open, staging, name, max_bytes)


def _zip_entries(zf, archive_name):
    for info in zf.infolist():
        kind = stat.S_IFMT(info.external_attr >> 16)
        if kind == stat.S_IFLNK:
            raise _unsafe(archive_name, info.filename, "is a symbolic link")
        if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
            raise _unsafe(archive_name, info.filename, "is a device, fifo or other special file")
        if info.flag_bits & 0x1:
            raise _unreadable(archive_name, info.filename, "is encrypted (password protected)")
        if info.compress_type not in _ZIP_METHODS:
            raise _unreadable(archive_name, info.filename, f"uses compression method "
                              f"{info.compress_type}, which Python's zipfile cannot read")
        is_dir = info.filename.endswith("/")  # (ZipInfo.is_dir fails on an empty name)
        yield _entry(info.filename, is_dir, info.file_size, info, archive_name)


def _entry(member_name, is_dir, size, info, archive_name):
    path = PurePosixPath(member_name.replace("\\", "/"))
    if "\0" in member_name:
        raise _unsafe(archive_name, member_name, "has a NUL character in its name")
    if member_name.startswith(("/", "\\")) or (path.parts and path.parts[0].endswith(":")):
        raise _unsafe(archive_name, member_name, "has an absolute path")
    if ".." in path.parts:
        raise _unsafe(archive_name, member_name, "has '..' in its path")
    if not path.parts and not is_dir:
        raise _unsafe(archive_name, member_name, "is a file without a name")
    return _Entry(member_name, path, is_dir, 0 if is_dir else max(size, 0), info)


def _declared(entries, archive_name, max_bytes, max_members):
    """``entries`` as a list, refused as soon as their number or declared size is too large."""
    found, total = [], 0
    for entry in entries:
        found.append(entry)
        total += entry.size
        if len(found) > max_members:
            raise _too_many(archive_name, max_members)
        if total > max_bytes:
            raise _too_big(archive_name, max_bytes, f"its headers declare {total:,} bytes "
                                                    f"or more")
    return found


def _write_members(entries, open_member, staging, archive_name, max_bytes):
    """Write ``entries`` under ``staging`` as plain files and folders, counting the bytes."""
    written = 0
    for entry in entries:
        target = staging.joinpath(*entry.path.parts)
        with _writing(archive_name, entry.name):
            if entry.is_dir:
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with _reading(archive_name, entry.name):
                stream = open_member(entry.info)
            with stream, open(target, "wb") as out:
                while True:
                    with _reading(archive_name, entry.name):
                        block = stream.read(CHUNK)
                    if not block:
                        break
                    written += len(block)
                    if written > max_bytes:
                        raise _too_big(archive_name, max_bytes,
                                       f"found while extracting {entry.name!r}")
                    out.write(block)


@contextmanager
def _reading(archive_name, member=None):
    """An error while reading the archive means it is damaged or cannot be read."""
    try:
        yield
    except TextclusterError:
        raise
    except _READ_ERRORS as exc:
        raise _corrupt(archive_name, member, exc) from None


@contextmanager
def _writing(archive_name, member):
    try:
        yield
    except OSError as exc:
        if exc.errno not in _CLASHES:
            raise
        raise CorpusFormatError(
            f"cannot extract {archive_name}: member {member!r} cannot be written "
            f"({exc.strerror}); it clashes with another member (a file and a folder of the "
            f"same name) or its name is not valid on this system. Nothing was installed. "
            f"Download and unpack the archive by hand into the corpus folder."
        ) from None


def _corrupt(archive_name, member, exc):
    detail = " ".join(str(exc).split())
    if isinstance(exc, tarfile.ReadError) and "could not be opened" in detail:
        detail = "neither a tar file nor one compressed with gzip, bzip2 or xz"
    where = f": member {member!r} cannot be read" if member else ""
    return CorpusFormatError(
        f"{archive_name} is not a readable archive{where} ({type(exc).__name__}"
        f"{': ' + detail if detail else ''}); it is probably truncated or corrupt. Nothing "
        f"was installed. {FETCH_AGAIN}"
    )


def _unreadable(archive_name, member, reason):
    return CorpusFormatError(
        f"cannot extract {archive_name}: member {member!r} {reason}. Nothing was installed. "
        f"Download the archive by hand and unpack it into the corpus folder with a tool that "
        f"can, or, if the download was damaged, run `textcluster corpora fetch NAME --force`."
    )


def _unsafe(archive_name, member, reason):
    return CorpusFormatError(
        f"refusing to extract {archive_name}: member {member!r} {reason}. Corpus archives hold "
        f"only files and folders, so nothing was extracted: the archive is not trustworthy. "
        f"Check where it comes from, or download the corpus by hand."
    )


def _too_many(archive_name, max_members):
    return ArchiveLimitError(
        f"refusing to extract {archive_name}: it has more than {max_members:,} members, the "
        f"limit against archive bombs. Nothing was installed. If the archive is genuine, raise "
        f"the limit with ${MAX_MEMBERS_ENV} and fetch again."
    )


def _too_big(archive_name, max_bytes, detail):
    limit = (f"{max_bytes >> 20:,} MiB" if max_bytes % (1 << 20) == 0
             else f"{max_bytes:,} bytes")
    return ArchiveLimitError(
        f"refusing to extract {archive_name}: it unpacks to more than {limit} ({detail}), the "
        f"limit against archive bombs. Nothing was installed. If the archive is genuine, raise "
        f"the limit with ${MAX_UNPACKED_ENV} (in MiB) and fetch again."
    )


def _strip_single_directory(staging):
    """The folder whose contents are the corpus: ``staging``, or its only sub-folder."""
    children = list(staging.iterdir())
    if len(children) == 1 and children[0].is_dir() and not children[0].is_symlink():
        return children[0]
    return staging


def _verify_extracted(card, root, archive_name):
    for name in card.all_files:
        path = card.find_file(root, name)
        if path is not None:
            _verify_card_file(card, path, path.name, archive_name)


def _move_tree(source, target, archive_name):
    """Move the contents of ``source`` into ``target`` (replacing files); returns the paths
    moved, relative to ``target``. Every destination is checked before anything moves."""
    plan = []
    for path in sorted(source.rglob("*")):
        relative = PurePosixPath(path.relative_to(source).as_posix())
        mode = path.lstat().st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):  # (only files and folders are made)
            raise _unsafe(archive_name, relative.as_posix(), "is not a plain file or folder")
        if _TEMPORARY.fullmatch(relative.parts[0]) or relative.parts[0] == LOCK_NAME:
            raise _unsafe(archive_name, relative.as_posix(), "has a name textcluster reserves "
                                                             "for its temporary files")
        _check_destination(target, relative, stat.S_ISDIR(mode), archive_name)
        plan.append((path, relative, stat.S_ISDIR(mode)))
    moved = []
    for path, relative, is_dir in plan:
        destination = target.joinpath(*relative.parts)
        if is_dir:
            destination.mkdir(exist_ok=True)
        else:
            os.replace(path, destination)
            moved.append(relative.as_posix())
    return moved


def _check_destination(target, relative, is_dir, archive_name):
    """Refuse to move ``relative`` into ``target`` through a link, or where a file and a folder
    would clash; a link where a file goes is replaced by it (``os.replace`` does not follow)."""
    current = target
    for depth, part in enumerate(relative.parts, start=1):
        current = current / part
        try:
            mode = current.lstat().st_mode
        except FileNotFoundError:
            return
        last = depth == len(relative.parts)
        if stat.S_ISLNK(mode) and (is_dir or not last):
            raise CorpusFormatError(
                f"refusing to install {archive_name}: {current} is a symbolic link (to "
                f"{os.readlink(current)!r}) where the archive has a folder, and fetch never "
                f"writes through a link. Nothing was installed; remove it and fetch again."
            )
        if not stat.S_ISLNK(mode) and stat.S_ISDIR(mode) != (is_dir or not last):
            kind = "folder" if stat.S_ISDIR(mode) else "file"
            raise CorpusFormatError(
                f"cannot install {archive_name}: {current} is a {kind} in the corpus folder "
                f"where the archive has a {'file' if kind == 'folder' else 'folder'}. Nothing "
                f"was installed; remove it and fetch again."
            )
