"""Downloads and archives under faults: cut transfers, archive bombs, leftovers of a killed
fetch, corrupt archives. Each ends in the project's own error naming what, where and what to do,
with nothing installed and no temporary file left."""

import bz2
import gzip
import io
import lzma
import os
import random
import signal
import subprocess
import sys
import tarfile
import threading
import time
import zipfile
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from textcluster.corpora import _archive, fetch
from textcluster._errors import (CorpusFormatError, DataNotFoundError, InvalidInputError,
                                 TextclusterError)

from .test_fetch import leftovers, make_card, sha256, tar_bytes

# -- a server that lies ---------------------------------------------------------------------------


class LyingHandler(BaseHTTPRequestHandler):
    """``/short``: declares 300,000 bytes, sends 150,000 and closes; ``/chunked``: a chunked
    transfer cut inside a chunk; ``/unsized``: no Content-Length, closes after 1,000 bytes;
    ``/slow``: 300,000 declared bytes, 1,000 at a time, slowly."""

    protocol_version = "HTTP/1.1"

    def do_GET(self):
        self.close_connection = True
        self.send_response(200)
        if self.path.startswith("/short"):
            self.send_header("Content-Length", "300000")
            self.end_headers()
            self.wfile.write(b"x" * 150_000)
        elif self.path.startswith("/chunked"):
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(b"1000\r\n" + b"x" * 0x1000 + b"\r\n" + b"1000\r\n" + b"x" * 100)
        elif self.path.startswith("/unsized"):
            self.end_headers()
            self.wfile.write(b"y" * 1000)
        elif self.path.startswith("/slow"):
            self.send_header("Content-Length", "300000")
            self.end_headers()
            for _ in range(300):
                self.wfile.write(b"z" * 1000)
                self.wfile.flush()
                time.sleep(0.05)
        self.wfile.flush()

    def log_message(self, *args):
        pass


@pytest.fixture
def liar():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), LyingHandler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


# -- truncated downloads --------------------------------------------------------------------------


@pytest.mark.parametrize("filename", ["a.bin", "pack.tar.gz"])
def test_a_download_shorter_than_declared_is_not_installed(tmp_path, liar, filename):
    url = f"{liar}/short/{filename}"
    card = make_card(tmp_path, [url], {"a.bin": ""})
    with pytest.raises(DataNotFoundError) as info:
        fetch.fetch_corpus(card, data_dir=tmp_path / "data")
    message = str(info.value)
    assert url in message and "150,000 of 300,000 bytes" in message
    assert "nothing was installed" in message.lower() and "by hand" in message
    assert not (tmp_path / "data" / "mini").exists()


def test_a_download_shorter_than_declared_leaves_an_existing_folder_as_it_was(tmp_path, liar):
    folder = tmp_path / "data" / "mini"
    folder.mkdir(parents=True)
    (folder / "notes.txt").write_text("mine")
    card = make_card(tmp_path, [f"{liar}/short/a.bin"], {"a.bin": ""})
    with pytest.raises(DataNotFoundError, match="150,000 of 300,000"):
        fetch.fetch_corpus(card, data_dir=tmp_path / "data")
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]


def test_a_cut_chunked_transfer_is_a_clear_error(tmp_path, liar):
    url = f"{liar}/chunked/a.bin"
    card = make_card(tmp_path, [url], {"a.bin": ""})
    with pytest.raises(DataNotFoundError) as info:
        fetch.fetch_corpus(card, data_dir=tmp_path / "data")
    message = str(info.value)
    assert url in message and "cut" in message and "by hand" in message
    assert not (tmp_path / "data" / "mini").exists()


def test_download_alone_removes_its_temporary_file(tmp_path, liar):
    with pytest.raises(DataNotFoundError, match="150,000 of 300,000"):
        fetch.download(f"{liar}/short/a.bin", tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_an_unchecked_download_is_listed_as_unverified(tmp_path, liar):
    """Without a Content-Length or a checksum, completeness cannot be known: the file is
    installed but never reported as verified."""
    card = make_card(tmp_path, [f"{liar}/unsized/a.bin"], {"a.bin": ""})
    report = fetch.fetch_corpus(card, data_dir=tmp_path / "data")
    assert report.installed == ["a.bin"] and report.unverified == ["a.bin"]
    assert report.verified == []


def test_verified_lists_only_files_checked_against_the_card(tmp_path):
    archive = tmp_path / "pack.tar.gz"
    archive.write_bytes(tar_bytes([("a.txt", b"alpha"), ("b.txt", b"bravo")]))
    card = make_card(tmp_path, [archive.as_uri()], {"a.txt": sha256(b"alpha"), "b.txt": ""})
    report = fetch.fetch_corpus(card, data_dir=tmp_path / "data")
    assert report.verified == ["a.txt"] and report.unverified == ["b.txt"]


# -- limits ---------------------------------------------------------------------------------------


def bomb(kind, size=8 << 20):
    """A small archive of ``size`` zero bytes (tens of kB compressed)."""
    if kind == "zip":
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("top/zeros.bin", bytes(size))
        return buffer.getvalue()
    return tar_bytes([("top/zeros.bin", bytes(size))], mode=f"w:{kind}")


@pytest.mark.parametrize("kind, suffix", [("gz", ".tar.gz"), ("zip", ".zip")])
def test_an_archive_bomb_is_refused(tmp_path, monkeypatch, kind, suffix):
    archive = tmp_path / f"bomb{suffix}"
    archive.write_bytes(bomb(kind))
    assert archive.stat().st_size < 100_000
    monkeypatch.setenv(fetch.MAX_UNPACKED_ENV, "1")
    card = make_card(tmp_path, [archive.as_uri()], {"zeros.bin": ""})
    with pytest.raises(fetch.ArchiveLimitError) as info:
        fetch.fetch_corpus(card, data_dir=tmp_path / "data")
    message = " ".join(str(info.value).split())
    assert f"bomb{suffix}" in message and "1 MiB" in message and fetch.MAX_UNPACKED_ENV in message
    assert not (tmp_path / "data" / "mini").exists()


@pytest.mark.parametrize("kind, suffix", [("gz", ".tar.gz"), ("zip", ".zip")])
def test_the_unpacked_size_is_also_counted_while_extracting(tmp_path, monkeypatch, kind, suffix):
    """Headers can lie: with the check of the declared sizes switched off, the bytes actually
    written still stop the extraction."""
    monkeypatch.setattr(_archive, "_declared", lambda entries, *limits: list(entries))
    archive = tmp_path / f"bomb{suffix}"
    archive.write_bytes(bomb(kind))
    (tmp_path / "out").mkdir()
    with pytest.raises(fetch.ArchiveLimitError, match="more than 1 MiB"):
        fetch.extract_archive(archive, tmp_path / "out", max_bytes=1 << 20)
    assert list((tmp_path / "out").iterdir()) == []


def test_a_lying_tar_header_is_refused_before_extracting(tmp_path):
    """A header declaring 1 TiB (a sparse or truncated member) is refused at the default limit
    without reading any data."""
    info = tarfile.TarInfo("huge.bin")
    info.size = 1 << 40
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.addfile(info)  # no data: the archive is a header only
    archive = tmp_path / "huge.tar"
    archive.write_bytes(buffer.getvalue())
    (tmp_path / "out").mkdir()
    with pytest.raises(fetch.ArchiveLimitError, match="huge.tar"):
        fetch.extract_archive(archive, tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []


def patch_zip(data, local, central):
    """``data`` with the bytes at ``offset`` of every local / central header replaced."""
    data = bytearray(data)
    for signature, patches in ((b"PK\x03\x04", local), (b"PK\x01\x02", central)):
        start = data.find(signature)
        while start >= 0:
            for offset, value in patches.items():
                data[start + offset:start + offset + len(value)] = value
            start = data.find(signature, start + 4)
    return bytes(data)


def test_a_lying_zip_directory_is_refused_before_extracting(tmp_path):
    """A central directory declaring 4 GiB for a 5-byte member."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("a.txt", b"alpha")
    archive = tmp_path / "pack.zip"
    archive.write_bytes(patch_zip(buffer.getvalue(), {}, {24: (0xFFFFFFFE).to_bytes(4, "little")}))
    (tmp_path / "out").mkdir()
    with pytest.raises(fetch.ArchiveLimitError, match="pack.zip"):
        fetch.extract_archive(archive, tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []


@pytest.mark.parametrize("suffix", [".tar.gz", ".zip"])
def test_too_many_members_are_refused(tmp_path, monkeypatch, suffix):
    archive = tmp_path / f"many{suffix}"
    names = [f"top/{i}.txt" for i in range(30)]
    if suffix == ".zip":
        with zipfile.ZipFile(archive, "w") as zf:
            for name in names:
                zf.writestr(name, b"")
    else:
        archive.write_bytes(tar_bytes([(name, b"") for name in names]))
    monkeypatch.setenv(fetch.MAX_MEMBERS_ENV, "20")
    card = make_card(tmp_path, [archive.as_uri()], {"0.txt": ""})
    with pytest.raises(fetch.ArchiveLimitError) as info:
        fetch.fetch_corpus(card, data_dir=tmp_path / "data")
    message = " ".join(str(info.value).split())
    assert f"many{suffix}" in message and "20 members" in message
    assert fetch.MAX_MEMBERS_ENV in message
    assert not (tmp_path / "data" / "mini").exists()


def test_limits_from_the_environment_are_checked(tmp_path, monkeypatch):
    monkeypatch.setenv(fetch.MAX_UNPACKED_ENV, "lots")
    with pytest.raises(InvalidInputError, match=f"{fetch.MAX_UNPACKED_ENV}.*'lots'"):
        fetch.extract_archive(tmp_path / "any.tar", tmp_path)


def test_the_default_limits_leave_room_for_the_real_archives():
    """reuters21578.tar.gz, the largest archive on the cards, unpacks to 28.0 MB in 31 files."""
    assert fetch.MAX_UNPACKED_BYTES >= 8 * 28_000_000 and fetch.MAX_MEMBERS >= 100 * 31
    assert fetch.MAX_UNPACKED_BYTES < 512 << 20  # the bomb of the report (512 MiB) is refused


# -- leftovers of a killed fetch ------------------------------------------------------------------


def plant_leftovers(folder):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ".download-0123456789abcdef.part").write_bytes(b"half a download")
    staging = folder / ".extract-fedcba9876543210"
    (staging / "top" / "docs").mkdir(parents=True)
    (staging / "top" / "docs" / "big.bin").write_bytes(b"half an archive")
    (folder / ".extract-k2_x9q0a").mkdir()  # as earlier versions named it
    (folder / ".notes").write_text("mine")  # not a fetch's: stays
    (folder / ".download-mine.txt").write_text("mine")  # not a fetch's name: stays


def test_the_next_fetch_removes_the_leftovers_of_a_killed_one(tmp_path):
    folder = tmp_path / "data" / "mini"
    plant_leftovers(folder)
    (tmp_path / "a.txt").write_bytes(b"alpha")
    card = make_card(tmp_path, [(tmp_path / "a.txt").as_uri()], {"a.txt": sha256(b"alpha")})
    fetch.fetch_corpus(card, data_dir=tmp_path / "data")
    assert sorted(leftovers(folder)) == [".download-mine.txt", ".notes"]
    assert (folder / "a.txt").read_bytes() == b"alpha"


def test_leftovers_are_removed_even_when_the_corpus_is_present(tmp_path):
    folder = tmp_path / "data" / "mini"
    plant_leftovers(folder)
    (folder / "a.txt").write_bytes(b"alpha")
    card = make_card(tmp_path, ["https://example.org/a.txt"], {"a.txt": sha256(b"alpha")})
    assert fetch.fetch_corpus(card, data_dir=tmp_path / "data").already_present
    assert sorted(leftovers(folder)) == [".download-mine.txt", ".notes"]


def test_a_running_fetch_keeps_its_files_and_a_second_one_is_refused(tmp_path):
    folder = tmp_path / "data" / "mini"
    plant_leftovers(folder)
    (tmp_path / "a.txt").write_bytes(b"alpha")
    card = make_card(tmp_path, [(tmp_path / "a.txt").as_uri()], {"a.txt": ""})
    with fetch.fetch_lock(folder):  # as another fetch (its own open file) would hold it
        with pytest.raises(fetch.FetchBusyError) as info:
            fetch.fetch_corpus(card, data_dir=tmp_path / "data")
        assert str(folder) in str(info.value) and "wait" in str(info.value)
        assert len(leftovers(folder)) == 6  # the other fetch's files and the lock are kept
    assert not (folder / "a.txt").exists()
    fetch.fetch_corpus(card, data_dir=tmp_path / "data")
    assert sorted(leftovers(folder)) == [".download-mine.txt", ".notes"]


def test_without_fcntl_a_lock_file_of_a_killed_fetch_is_taken_over(tmp_path, monkeypatch):
    monkeypatch.setattr(fetch, "fcntl", None)
    folder = tmp_path / "data" / "mini"
    plant_leftovers(folder)
    (tmp_path / "a.txt").write_bytes(b"alpha")
    card = make_card(tmp_path, [(tmp_path / "a.txt").as_uri()], {"a.txt": ""})
    lock = folder / fetch.LOCK_NAME
    lock.write_text("fetch")  # a fresh lock: another fetch is running
    with pytest.raises(fetch.FetchBusyError):
        fetch.fetch_corpus(card, data_dir=tmp_path / "data")
    old = time.time() - fetch.STALE_LOCK_SECONDS - 60  # left by a fetch killed long ago
    os.utime(lock, (old, old))
    fetch.fetch_corpus(card, data_dir=tmp_path / "data")
    assert sorted(leftovers(folder)) == [".download-mine.txt", ".notes"]


KILLED_FETCH = """
import sys
from textcluster.corpora import cards, fetch
fetch.fetch_corpus(cards.load_card(sys.argv[1]), data_dir=sys.argv[2])
"""


def test_a_fetch_killed_mid_download_is_cleaned_up_by_the_next(tmp_path, liar):
    card = make_card(tmp_path, [f"{liar}/slow/a.bin"], {"a.bin": ""})
    folder = tmp_path / "data" / "mini"
    child = subprocess.Popen([sys.executable, "-c", KILLED_FETCH, str(card.path),
                              str(tmp_path / "data")])
    try:
        deadline = time.monotonic() + 60
        while not any(p.stat().st_size for p in folder.glob(".download-*.part")):
            assert time.monotonic() < deadline and child.poll() is None
            time.sleep(0.05)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert [name for name in leftovers(folder) if name.endswith(".part")]
    (tmp_path / "a.bin").write_bytes(b"alpha")
    fetch.fetch_corpus(make_card(tmp_path, [(tmp_path / "a.bin").as_uri()], {"a.bin": ""}),
                       data_dir=tmp_path / "data")
    assert leftovers(folder) == [] and (folder / "a.bin").read_bytes() == b"alpha"


# -- corrupt archives -----------------------------------------------------------------------------


TEXT = bytes(range(32, 127)) * 2000  # 190 kB that compress well
RANDOM = random.Random(0).randbytes(150_000)  # and 150 kB that do not
TAR = tar_bytes([("a.txt", RANDOM), ("b.txt", TEXT)], mode="w")


def flip(data, at=None, n=64):
    """``data`` with ``n`` bytes inverted from ``at`` (default: the middle)."""
    data = bytearray(data)
    at = len(data) // 2 if at is None else at
    data[at:at + n] = bytes(b ^ 0xFF for b in data[at:at + n])
    return bytes(data)


def half(data):
    return data[:len(data) // 2]


def gzip_cut_by_a_bad_block(data):
    """A gzip stream whose first 100 kB are fine, followed by an invalid deflate block."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    body = deflate.compress(data[:100_000]) + deflate.flush(zlib.Z_FULL_FLUSH)
    return b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + body + b"\xff" * 100


def zip_of(members, compression=zipfile.ZIP_DEFLATED):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as zf:
        for name, data in members:
            zf.writestr(name, data)
    return buffer.getvalue()


ZIP = zip_of([("a.txt", TEXT)])
CORRUPT = {
    # case: (archive file name, bytes, member the message names, or None); the exception
    # Python raises is in the comment
    "xz-corrupt": ("pack.tar.xz", flip(lzma.compress(TAR)), None),  # LZMAError
    "xz-truncated": ("pack.tar.xz", half(lzma.compress(TAR)), None),  # EOFError
    "gz-truncated": ("pack.tar.gz", half(gzip.compress(TAR)), None),  # EOFError
    "gz-bad-block": ("pack.tar.gz", gzip_cut_by_a_bad_block(TAR), None),  # zlib.error
    "gz-bad-crc": ("pack.tar.gz", flip(gzip.compress(TAR), at=-8, n=4), None),  # BadGzipFile
    "gz-no-trailer": ("pack.tar.gz", gzip.compress(TAR)[:-6], None),  # EOFError
    "bz2-corrupt": ("pack.tar.bz2", flip(bz2.compress(TAR * 2, 1)), None),  # OSError
    "bz2-truncated": ("pack.tar.bz2", half(bz2.compress(TAR)), None),  # tarfile.ReadError
    "tar-garbage": ("pack.tar", b"this is not a tar file" * 40, None),  # tarfile.ReadError
    "tar-truncated": ("pack.tar", half(TAR), None),  # tarfile.ReadError
    "zip-garbage": ("pack.zip", b"PK\x03\x04 not really a zip" * 20, None),  # BadZipFile
    "zip-truncated": ("pack.zip", ZIP[:-30], None),  # BadZipFile
    "zip-bad-crc": ("pack.zip", flip(zip_of([("a.txt", TEXT)], zipfile.ZIP_STORED)),
                    "a.txt"),  # BadZipFile
    "zip-bad-deflate": ("pack.zip", flip(ZIP, at=40, n=1), "a.txt"),  # zlib.error
    "zip-encrypted": ("pack.zip", patch_zip(ZIP, {6: b"\x01"}, {8: b"\x01"}),
                      "a.txt"),  # RuntimeError
    "zip-unknown-method": ("pack.zip", patch_zip(ZIP, {8: b"\x63\x00"}, {10: b"\x63\x00"}),
                           "a.txt"),  # NotImplementedError
}


@pytest.mark.parametrize("case", sorted(CORRUPT))
def test_a_corrupt_archive_is_a_clear_error(tmp_path, case):
    filename, data, member = CORRUPT[case]
    archive = tmp_path / filename
    archive.write_bytes(data)
    card = make_card(tmp_path, [archive.as_uri()], {"a.txt": ""})
    with pytest.raises(CorpusFormatError) as info:
        fetch.fetch_corpus(card, data_dir=tmp_path / "data")
    message = " ".join(str(info.value).split())
    assert filename in message and "--force" in message and "by hand" in message
    if member:
        assert f"member {member!r}" in message
    assert not (tmp_path / "data" / "mini").exists()


def test_every_corrupt_archive_error_is_the_projects_own(tmp_path):
    """extract_archive alone, on each corrupt archive, into a folder that stays empty."""
    (tmp_path / "out").mkdir()
    for filename, data, _ in CORRUPT.values():
        archive = tmp_path / filename
        archive.write_bytes(data)
        with pytest.raises(TextclusterError):
            fetch.extract_archive(archive, tmp_path / "out")
        assert list((tmp_path / "out").iterdir()) == []
