"""Safe unpacking of a downloaded corpus archive into its corpus folder (the guarantees are those
of :mod:`textcluster.corpora.fetch`): every member is checked on its header and counted against
the limits, written as a plain file or folder into a temporary folder inside the corpus folder,
checked against the card, and only then moved into place.
"""

import errno
import lzma
import os
import re
import secrets
import shutil
import stat
import tarfile
import zipfile
import zlib
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .._errors import CorpusFormatError, InvalidInputError, TextclusterError
from .cards import Card
from .loaders._paths import StrPath

CHUNK = 1 << 16
# The largest archive on the cards, reuters21578.tar.gz, unpacks to 28.0 MB in 31 files: the
# limits leave room for corpora about nine times larger, and stop archive bombs.
MAX_UNPACKED_BYTES = 256 << 20
MAX_MEMBERS = 10_000
MAX_UNPACKED_ENV = "TEXTCLUSTER_MAX_UNPACKED_MIB"
MAX_MEMBERS_ENV = "TEXTCLUSTER_MAX_MEMBERS"
# The names a fetch gives its own files in a corpus folder, which no archive member may take:
# the lock, and the temporary downloads and extraction folders (also the ``.extract-`` folders
# of mkdtemp, 8 characters, that earlier versions made).
LOCK_NAME = ".fetch.lock"
TEMPORARY = re.compile(r"\.download-[0-9a-f]{16}\.part|\.extract-(?:[0-9a-f]{16}|[a-z0-9_]{8})")
FETCH_AGAIN = ("Run `textcluster corpora fetch NAME --force` to download it again, or download "
               "and unpack it by hand into the corpus folder (see `textcluster corpora info "
               "NAME`).")


class ArchiveLimitError(CorpusFormatError):
    """An archive would unpack to more bytes or members than the limits allow."""


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


def extract_archive(archive: StrPath, folder: StrPath, name: str | None = None,
                    verify: Card | None = None, max_bytes: int | None = None,
                    max_members: int | None = None) -> list[str]:
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
            card.verify_file(path, path.name, archive_name)


def _move_tree(source, target, archive_name):
    """Move the contents of ``source`` into ``target`` (replacing files); returns the paths
    moved, relative to ``target``. Every destination is checked before anything moves."""
    plan = []
    for path in sorted(source.rglob("*")):
        relative = PurePosixPath(path.relative_to(source).as_posix())
        mode = path.lstat().st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):  # (only files and folders are made)
            raise _unsafe(archive_name, relative.as_posix(), "is not a plain file or folder")
        if TEMPORARY.fullmatch(relative.parts[0]) or relative.parts[0] == LOCK_NAME:
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
