"""Downloading a corpus: checksums, atomic installation, safe extraction, progress.

Nothing here touches the network: the files are served from a local HTTP server on 127.0.0.1
(or read through file:// URLs).
"""

import functools
import gzip
import hashlib
import io
import sys
import tarfile
import threading
import zipfile
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest

from textcluster.corpora import cards, fetch
from textcluster._errors import CorpusFormatError, DataNotFoundError
from textcluster.cli._common import ProgressBar
from textcluster.progress import reporting_progress


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def server(tmp_path):
    """``(folder served, base URL)``: an HTTP server on 127.0.0.1 for the test's files."""
    root = tmp_path / "www"
    root.mkdir()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0),
                                functools.partial(QuietHandler, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def make_card(tmp_path, urls, files, optional=None, source_sha256=None, compression=()):
    """A card for corpus ``mini`` in folder ``mini``, downloading ``urls``."""
    sources = "".join(
        f'[[sources]]\nurl = "{url}"\n'
        + (f'sha256 = "{source_sha256}"\n' if source_sha256 else "") + "\n"
        for url in urls)
    def table(entries):
        return "".join(f'"{name}" = "{digest or ""}"\n' for name, digest in entries.items())
    text = (
        'name = "mini"\ntitle = "Mini"\ndescription = "A test corpus."\n'
        'homepage = "https://example.org/mini"\nfolder = "mini"\nlabels = "none"\n'
        'labelled = false\nlicence = "none"\ncitation = "none"\n'
        f"compression = {list(compression)!r}\n".replace("'", '"')
        + "\n" + sources + "[files]\n" + table(files)
        + ("\n[optional_files]\n" + table(optional) if optional else "")
    )
    folder = tmp_path / "cards"
    folder.mkdir(exist_ok=True)
    (folder / "mini.toml").write_text(text, encoding="utf-8")
    return cards.load_card(folder / "mini.toml")


def tar_bytes(members, mode="w:gz"):
    """A tar archive of ``members``: ``(name, bytes)`` files or ready ``TarInfo``s."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as tar:
        for member in members:
            if isinstance(member, tarfile.TarInfo):
                tar.addfile(member)
            else:
                name, data = member
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def link(name, target, kind=tarfile.SYMTYPE):
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info


def leftovers(folder):
    """Temporary files or folders a fetch left behind."""
    return [p.name for p in folder.iterdir() if p.name.startswith(".")] if folder.is_dir() else []


# -- single files ---------------------------------------------------------------------------------


def test_fetch_verifies_and_installs_a_file(server, tmp_path):
    root, base = server
    data = b"MATLAB 5.0 pretend" * 100
    (root / "corpus.mat").write_bytes(data)
    card = make_card(tmp_path, [f"{base}/corpus.mat"], {"corpus.mat": sha256(data)})
    report = fetch.fetch_corpus(card, data_dir=tmp_path / "data")
    folder = tmp_path / "data" / "mini"
    assert report.folder == folder and report.downloaded == [f"{base}/corpus.mat"]
    assert (folder / "corpus.mat").read_bytes() == data
    assert report.installed == ["corpus.mat"] and report.unverified == []
    assert leftovers(folder) == []


def test_checksum_mismatch_installs_nothing(server, tmp_path):
    root, base = server
    (root / "corpus.mat").write_bytes(b"tampered")
    card = make_card(tmp_path, [f"{base}/corpus.mat"], {"corpus.mat": sha256(b"original")})
    with pytest.raises(CorpusFormatError) as info:
        fetch.fetch_corpus(card, data_dir=tmp_path / "data")
    message = str(info.value)
    assert "checksum mismatch" in message and "corpus.mat" in message
    assert sha256(b"tampered") in message and "not installed" in message
    assert not (tmp_path / "data" / "mini").exists()  # the folder it made is gone again


def test_failed_fetch_leaves_an_existing_folder_as_it_was(server, tmp_path):
    root, base = server
    (root / "corpus.mat").write_bytes(b"tampered")
    folder = tmp_path / "data" / "mini"
    folder.mkdir(parents=True)
    (folder / "notes.txt").write_text("mine")
    card = make_card(tmp_path, [f"{base}/corpus.mat"], {"corpus.mat": sha256(b"original")})
    with pytest.raises(CorpusFormatError, match="checksum mismatch"):
        fetch.fetch_corpus(card, data_dir=tmp_path / "data")
    assert [p.name for p in folder.iterdir()] == ["notes.txt"]


def test_source_checksum_is_checked_before_anything_else(server, tmp_path):
    root, base = server
    (root / "pack.tar.gz").write_bytes(tar_bytes([("a.txt", b"a")]))
    card = make_card(tmp_path, [f"{base}/pack.tar.gz"], {"a.txt": ""},
                     source_sha256=sha256(b"another archive"))
    with pytest.raises(CorpusFormatError, match="checksum mismatch for the download"):
        fetch.fetch_corpus(card, data_dir=tmp_path / "data")
    assert not (tmp_path / "data" / "mini").exists()


def test_unknown_checksum_is_reported_as_unverified(tmp_path):
    """Also: file:// URLs work like http ones."""
    (tmp_path / "a.txt").write_bytes(b"alpha")
    card = make_card(tmp_path, [(tmp_path / "a.txt").as_uri()], {"a.txt": ""})
    report = fetch.fetch_corpus(card, data_dir=tmp_path / "data")
    assert report.unverified == ["a.txt"]
    assert (tmp_path / "data" / "mini" / "a.txt").read_bytes() == b"alpha"


def test_present_files_are_not_downloaded_again(server, tmp_path):
    root, base = server
    (root / "a.txt").write_bytes(b"new")
    card = make_card(tmp_path, [f"{base}/a.txt"], {"a.txt": ""})
    folder = tmp_path / "data" / "mini"
    folder.mkdir(parents=True)
    (folder / "a.txt.gz").write_bytes(gzip.compress(b"old"))
    card = make_card(tmp_path, [f"{base}/a.txt"], {"a.txt": ""}, compression=["gz"])
    assert fetch.fetch_corpus(card, data_dir=tmp_path / "data").already_present
    assert not (folder / "a.txt").exists()
    report = fetch.fetch_corpus(card, data_dir=tmp_path / "data", force=True)
    assert report.downloaded and (folder / "a.txt").read_bytes() == b"new"


def test_only_missing_files_are_downloaded(server, tmp_path):
    root, base = server
    (root / "b.txt").write_bytes(b"bravo")
    card = make_card(tmp_path, [f"{base}/a.txt", f"{base}/b.txt"], {"a.txt": ""},
                     optional={"b.txt": sha256(b"bravo")})
    folder = tmp_path / "data" / "mini"
    folder.mkdir(parents=True)
    (folder / "a.txt").write_bytes(b"alpha")  # a.txt is not on the server: asking would fail
    report = fetch.fetch_corpus(card, data_dir=tmp_path / "data")
    assert report.downloaded == [f"{base}/b.txt"] and (folder / "b.txt").read_bytes() == b"bravo"


def test_http_error_is_a_clear_message(server, tmp_path):
    _, base = server
    card = make_card(tmp_path, [f"{base}/missing.mat"], {"missing.mat": ""})
    with pytest.raises(DataNotFoundError, match=r"could not download .*missing.mat: HTTP 404"):
        fetch.fetch_corpus(card, data_dir=tmp_path / "data")
    assert not (tmp_path / "data" / "mini").exists()


def test_unreachable_host_is_a_clear_message(tmp_path):
    card = make_card(tmp_path, ["http://127.0.0.1:9/nothing.mat"], {"nothing.mat": ""})
    with pytest.raises(DataNotFoundError, match="could not download .*network connection"):
        fetch.fetch_corpus(card, data_dir=tmp_path / "data")


# -- archives -------------------------------------------------------------------------------------


def test_tar_gz_is_extracted_and_verified(server, tmp_path):
    root, base = server
    members = [("pack/a.txt", b"alpha"), ("pack/b.txt", b"bravo"), ("pack/docs/c.txt", b"c")]
    (root / "pack.tar.gz").write_bytes(tar_bytes(members))
    card = make_card(tmp_path, [f"{base}/pack.tar.gz"],
                     {"a.txt": sha256(b"alpha"), "b.txt": ""})
    report = fetch.fetch_corpus(card, data_dir=tmp_path / "data")
    folder = tmp_path / "data" / "mini"
    assert (folder / "a.txt").read_bytes() == b"alpha"  # the single top folder is stripped
    assert (folder / "docs" / "c.txt").read_bytes() == b"c"
    assert sorted(report.installed) == ["a.txt", "b.txt", "docs/c.txt"]
    assert sorted(report.unverified) == ["b.txt", "docs/c.txt"]
    assert leftovers(folder) == [] and not (folder / "pack.tar.gz").exists()


def test_zip_is_extracted(server, tmp_path):
    root, base = server
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("a.txt", b"alpha")
        zf.writestr("sub/b.txt", b"bravo")
    (root / "pack.zip").write_bytes(buffer.getvalue())
    card = make_card(tmp_path, [f"{base}/pack.zip"], {"a.txt": sha256(b"alpha")})
    fetch.fetch_corpus(card, data_dir=tmp_path / "data")
    assert (tmp_path / "data" / "mini" / "sub" / "b.txt").read_bytes() == b"bravo"


def test_extracted_file_with_a_wrong_checksum_is_not_installed(server, tmp_path):
    root, base = server
    (root / "pack.tar.gz").write_bytes(tar_bytes([("a.txt", b"changed"), ("b.txt", b"b")]))
    card = make_card(tmp_path, [f"{base}/pack.tar.gz"], {"a.txt": sha256(b"alpha")})
    with pytest.raises(CorpusFormatError, match="checksum mismatch for a.txt from pack.tar.gz"):
        fetch.fetch_corpus(card, data_dir=tmp_path / "data")
    assert not (tmp_path / "data" / "mini").exists()


@pytest.mark.parametrize("member, reason", [
    (("../evil.txt", b"x"), "'..'"),
    (("docs/../../evil.txt", b"x"), "'..'"),
    (("/tmp/evil.txt", b"x"), "absolute"),
    (link("docs/link", "../../evil.txt"), "symbolic link"),
    (link("link", "/etc/passwd"), "symbolic link"),
    (link("hard", "../evil.txt", tarfile.LNKTYPE), "hard link"),
    (link("fifo", "", tarfile.FIFOTYPE), "special file"),
])
def test_archive_member_escaping_its_folder_is_refused(server, tmp_path, member, reason):
    root, base = server
    (root / "pack.tar.gz").write_bytes(tar_bytes([("a.txt", b"alpha"), member]))
    card = make_card(tmp_path, [f"{base}/pack.tar.gz"], {"a.txt": ""})
    with pytest.raises(CorpusFormatError) as info:
        fetch.fetch_corpus(card, data_dir=tmp_path / "data")
    name = member.name if isinstance(member, tarfile.TarInfo) else member[0]
    message = str(info.value)
    assert f"member {name!r}" in message and reason in message and "pack.tar.gz" in message
    assert not (tmp_path / "data" / "mini").exists()  # not even a.txt
    assert not (tmp_path / "data" / "evil.txt").exists() and not (tmp_path / "evil.txt").exists()


def test_a_link_even_inside_the_folder_is_refused(tmp_path):
    """Corpora need no links, and a link judged safe where it is unpacked may point out of the
    folder once a top folder is stripped (see test_fetch_links.py)."""
    archive = tmp_path / "pack.tar"
    archive.write_bytes(tar_bytes([("docs/a.txt", b"alpha"), ("b.txt", b"b"),
                                   link("docs/alias.txt", "a.txt")], mode="w"))
    (tmp_path / "out").mkdir()
    with pytest.raises(CorpusFormatError, match=r"member 'docs/alias.txt' is a symbolic link"):
        fetch.extract_archive(archive, tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []


def test_zip_member_escaping_its_folder_is_refused(tmp_path):
    archive = tmp_path / "pack.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("a.txt", b"alpha")
        zf.writestr("../evil.txt", b"x")
    (tmp_path / "out").mkdir()
    with pytest.raises(CorpusFormatError, match=r"member '\.\./evil\.txt'.*'\.\.'"):
        fetch.extract_archive(archive, tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == [] and not (tmp_path / "evil.txt").exists()


def test_truncated_archive(tmp_path):
    data = tar_bytes([("a.txt", b"alpha" * 10_000)])
    archive = tmp_path / "pack.tar.gz"
    archive.write_bytes(data[: len(data) // 2])
    (tmp_path / "out").mkdir()
    with pytest.raises(CorpusFormatError, match="pack.tar.gz is not a readable archive"):
        fetch.extract_archive(archive, tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []


# -- progress -------------------------------------------------------------------------------------


class Recorder:
    """A ``progress(label, total)`` factory that records what a download reports."""

    def __init__(self):
        self.bars, self.done = [], 0

    def __call__(self, label, total):
        self.bars.append((label, total))
        return reporting_progress(self.add)

    def add(self, n):
        self.done += n


def test_download_reports_its_progress_in_bytes(server, tmp_path):
    root, base = server
    data = bytes(range(256)) * 1000  # several chunks
    (root / "big.bin").write_bytes(data)
    recorder = Recorder()
    path = fetch.download(f"{base}/big.bin", tmp_path, progress=recorder)
    assert path.read_bytes() == data and path.parent == tmp_path
    assert recorder.bars == [("downloading big.bin", len(data))]
    assert recorder.done == len(data)


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_on_a_terminal_only(server, tmp_path, monkeypatch):
    root, base = server
    (root / "big.bin").write_bytes(b"x" * 200_000)
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    fetch.download(f"{base}/big.bin", tmp_path, progress=ProgressBar)
    assert "downloading big.bin" in terminal.getvalue() and "100%" in terminal.getvalue()

    pipe = io.StringIO()  # not a terminal: no bar
    monkeypatch.setattr(sys, "stderr", pipe)
    fetch.download(f"{base}/big.bin", tmp_path, progress=ProgressBar)
    assert pipe.getvalue() == ""
