"""Download a corpus from the URLs on its card, verify it and unpack it (DESIGN §8, §10).

Every download goes to a temporary file in the corpus folder and is renamed into place only
after its sha256 (when the card knows it) has been checked. Archives (``.tar.gz``, ``.tar``,
``.zip``, ...) are checked member by member before anything is extracted: an absolute path, a
``..`` component, a link pointing outside the folder or a device file stops the extraction with
an error naming the member; tar files are extracted with tarfile's ``data`` filter as well. The
extracted files are verified against the card's checksums before they are moved into place.
"""

import os
import secrets
import shutil
import stat
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
import zlib
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from . import __version__
from ._errors import CorpusFormatError, DataNotFoundError
from .cards import file_sha256
from .ingest._paths import search_dirs
from .progress import progress_step

CHUNK = 1 << 16
TIMEOUT = 60  # seconds without data before a download is given up
BY_HAND = ("Check the network connection, or download the file by hand and put it in the "
           "corpus folder under --data-dir (see `textcluster corpora info NAME`).")


@dataclass
class FetchReport:
    """What :func:`fetch_corpus` did."""

    folder: Path
    downloaded: list = field(default_factory=list)  # URLs
    installed: list = field(default_factory=list)  # file names placed in the folder
    unverified: list = field(default_factory=list)  # installed files without a known sha256
    already_present: bool = False


def fetch_corpus(card, data_dir=None, force=False, progress=None):
    """Download, verify and unpack ``card``'s corpus into ``<data folder>/<card.folder>``.

    The data folder is ``data_dir``, else ``$TEXTCLUSTER_DATA``, else the default one.
    Sources whose files are already there are skipped unless ``force``; a card without sources
    raises :class:`DataNotFoundError` saying where the files come from. ``progress(label,
    total)`` returns a context manager showing a download's progress (bytes).
    """
    folder = search_dirs(data_dir)[0] / card.folder
    report = FetchReport(folder)
    if not force and len(card.present_files(folder)) == len(card.all_files):
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


# -- downloading ----------------------------------------------------------------------------------


def download(url, folder, sha256=None, progress=None):
    """Download ``url`` into a temporary file in ``folder`` and return its path; with
    ``sha256``, a file whose checksum differs is removed and :class:`CorpusFormatError`
    raised."""
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
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            total = _content_length(response)
            label = f"downloading {PurePosixPath(url).name}"
            bar = progress(label, total) if progress and total else nullcontext()
            with bar:
                for block in iter(lambda: response.read(CHUNK), b""):
                    out.write(block)
                    progress_step(len(block))
    except urllib.error.HTTPError as exc:
        raise DataNotFoundError(f"could not download {url}: HTTP {exc.code} {exc.reason}. "
                                f"{BY_HAND}") from None
    except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DataNotFoundError(f"could not download {url}: {reason}. {BY_HAND}") from None


def _content_length(response):
    try:
        return int(response.headers.get("Content-Length") or 0) or None
    except ValueError:
        return None




def check_sha256(path, expected, what, decompress=False):
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


def extract_archive(archive, folder, name=None, verify=None):
    """Extract ``archive`` safely into ``folder``; returns the names placed there.

    Every member is checked first (see the module docstring); the members are extracted into a
    temporary folder inside ``folder``, a single top-level directory is stripped, files the card
    ``verify`` knows are checked against its sha256, and only then moved into place.
    """
    archive, folder = Path(archive), Path(folder)
    name = name or archive.name
    staging = Path(tempfile.mkdtemp(prefix=".extract-", dir=folder))
    try:
        if name.lower().endswith(".zip"):
            _extract_zip(archive, staging, name)
        else:
            _extract_tar(archive, staging, name)
        root = _strip_single_directory(staging)
        if verify is not None:
            _verify_extracted(verify, root, name)
        return _move_tree(root, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _extract_tar(archive, staging, name):
    try:
        with tarfile.open(archive) as tar:
            members = tar.getmembers()
            for member in members:
                _check_tar_member(member, name)
            if hasattr(tarfile, "data_filter"):
                tar.extractall(staging, members=members, filter="data")
            else:  # Python without extraction filters: the checks above are the guard
                tar.extractall(staging, members=members)
    except tarfile.FilterError as exc:
        raise _unsafe(name, exc.tarinfo.name, str(exc)) from None
    except (tarfile.TarError, EOFError, zlib.error) as exc:
        raise _corrupt(name, exc) from None
    except OSError as exc:  # gzip.BadGzipFile has no errno; a full disk has one
        if exc.errno:
            raise
        raise _corrupt(name, exc) from None


def _corrupt(name, exc):
    return CorpusFormatError(f"{name} is not a readable archive ({type(exc).__name__}: {exc}); "
                             f"it is probably truncated or corrupt: download it again")


def _check_tar_member(member, archive_name):
    """Refuse a member that would land outside the extraction folder."""
    _check_member_path(member.name, archive_name)
    if member.issym():
        target = PurePosixPath(member.name).parent / member.linkname
        if member.linkname.startswith("/") or _escapes(target):
            raise _unsafe(archive_name, member.name,
                          f"it is a symbolic link to {member.linkname!r}, outside the folder")
    elif member.islnk():
        if member.linkname.startswith("/") or _escapes(PurePosixPath(member.linkname)):
            raise _unsafe(archive_name, member.name,
                          f"it is a hard link to {member.linkname!r}, outside the folder")
    elif not (member.isfile() or member.isdir()):
        raise _unsafe(archive_name, member.name, "it is a device, fifo or other special file")


def _check_member_path(member_name, archive_name):
    path = PurePosixPath(member_name.replace("\\", "/"))
    if path.is_absolute() or (path.parts and path.parts[0].endswith(":")):
        raise _unsafe(archive_name, member_name, "its path is absolute")
    if ".." in path.parts:
        raise _unsafe(archive_name, member_name, "its path contains '..'")


def _escapes(path):
    """Whether a relative path climbs above its root once ``..`` are resolved."""
    depth = 0
    for part in PurePosixPath(path).parts:
        depth += -1 if part == ".." else (0 if part == "." else 1)
        if depth < 0:
            return True
    return False


def _unsafe(archive_name, member_name, reason):
    return CorpusFormatError(
        f"refusing to extract {archive_name}: member {member_name!r} would be written outside "
        f"the corpus folder ({reason}). Nothing was extracted; the archive is not trustworthy."
    )


def _extract_zip(archive, staging, name):
    try:
        with zipfile.ZipFile(archive) as zf:
            infos = zf.infolist()
            for info in infos:
                _check_member_path(info.filename, name)
                if stat.S_ISLNK(info.external_attr >> 16):
                    raise _unsafe(name, info.filename, "it is a symbolic link")
            for info in infos:
                zf.extract(info, staging)
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        raise _corrupt(name, exc) from None


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


def _move_tree(source, target):
    """Move the contents of ``source`` into ``target`` (replacing files); returns the paths
    moved, relative to ``target``."""
    moved = []
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        destination = target / relative
        if path.is_dir() and not path.is_symlink():
            destination.mkdir(parents=True, exist_ok=True)
            continue
        destination.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, destination)
        moved.append(relative.as_posix())
    return moved
