"""``textcluster corpora list | info | fetch`` and ``textcluster cache info | clear``."""

import functools
import hashlib
import io
import tarfile
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from click.testing import CliRunner

from textcluster.corpora import cache, cards
from textcluster.cli import main
from textcluster.corpora.loaders import _paths

from .test_fetch_faults import CORRUPT, liar  # noqa: F401 (liar: a fixture)


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    """A fresh cache; only ``--data-dir`` is searched for corpora."""
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(_paths.DATA_ENV, raising=False)
    monkeypatch.setattr(_paths, "default_cache_dir", lambda: tmp_path / "default-data")


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def ok(*args):
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    return result.output


def fails(*args):
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit) and "Traceback" not in result.output
    return result.output


def write_tdt2(data_dir, n=40, m=60):
    folder = data_dir / "tdt2"
    folder.mkdir(parents=True)
    fea = sp.random(n, m, density=0.2, format="csc", random_state=0) * 5
    fea.data = np.ceil(fea.data)
    gnd = np.r_[np.ones(25), np.full(15, 2)][:, None]
    scipy.io.savemat(folder / "TDT2.mat", {"fea": fea, "gnd": gnd})
    return data_dir


def write_reuters(data_dir):
    """The 22 files of Reuters-21578 (the card needs them all), one short story in each."""
    folder = data_dir / "reuters21578"
    folder.mkdir(parents=True)
    topics = ["earn"] * 10 + ["acq"] * 8 + ["grain"] * 4
    words = {"earn": "profit dividend quarter", "acq": "merger takeover shares",
             "grain": "wheat harvest tonnes"}
    for i, topic in enumerate(topics, start=1):
        record = (
            f'<REUTERS TOPICS="YES" LEWISSPLIT="TRAIN" CGISPLIT="TRAINING-SET" NEWID="{i}">\n'
            f"<TOPICS><D>{topic}</D></TOPICS>\n<TEXT><TITLE>NEWS {i}</TITLE>"
            f"<BODY>The company reported {words[topic]} today.</BODY></TEXT>\n</REUTERS>\n")
        (folder / f"reut2-{i - 1:03d}.sgm").write_text(record, encoding="latin-1")
    return data_dir


def test_list_shows_every_card_and_where_it_is(tmp_path):
    output = ok("corpora", "list", "--data-dir", write_tdt2(tmp_path / "data"))
    lines = output.splitlines()
    assert lines[0].split() == ["name", "title", "present", "where"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert set(rows) == set(cards.load_cards())
    assert rows["tdt2"].split()[-2:] == ["yes", str(tmp_path / "data" / "tdt2")]
    assert rows["reuters"].split()[-2:] == ["no", "-"]


def test_info_of_a_matrix_corpus_with_statistics(tmp_path):
    data = write_tdt2(tmp_path / "data")
    output = ok("corpora", "info", "tdt2", "--data-dir", data)
    assert output.startswith("tdt2: TDT2") and "licence:" in output and "citation:" in output
    assert "http://www.cad.zju.edu.cn/home/dengcai/Data/TDT2/TDT2.mat" in output
    assert "selection:  variant=top30" in output
    flat = " ".join(output.split())
    assert f"present in {data / 'tdt2'} (1 of 2 files; optional files missing: TDT2_all.mat)" \
        in flat
    assert "documents   40" in output and "classes     2" in output
    assert "largest     1 25, 2 15" in output and "smallest    15 documents" in output
    assert "terms " in output and "non-zeros " in output
    assert [e.kind for e in cache.entries()] == ["corpus"]  # the statistics were cached
    assert ok("corpora", "info", "tdt2", "--data-dir", data) == output


def test_info_of_a_text_corpus(tmp_path):
    output = ok("corpora", "info", "reuters", "--data-dir", write_reuters(tmp_path / "data"))
    assert "documents   22" in output and "classes     3" in output
    assert "largest     earn 10, acq 8, grain 4" in output
    assert sorted(e.kind for e in cache.entries()) == ["corpus", "counts"]


def test_info_without_the_files_says_how_to_get_them(tmp_path):
    output = ok("corpora", "info", "reuters-cai", "--data-dir", tmp_path / "empty")
    flat = " ".join(output.split())
    assert "not present locally" in flat and str(tmp_path / "empty" / "reuters21578_cai") in flat
    assert "textcluster corpora fetch reuters-cai" in output and "statistics" not in output


def test_info_verify_reports_a_mismatch(tmp_path):
    output = fails("corpora", "info", "tdt2", "--verify", "--no-stats", "--data-dir",
                   write_tdt2(tmp_path / "data"))
    assert "TDT2.mat: MISMATCH" in output and "differ from the corpus card" in output
    assert "textcluster corpora fetch tdt2" in output


def test_info_of_an_unknown_corpus():
    output = fails("corpora", "info", "nope")
    assert "no corpus card 'nope'" in output and "tdt2" in output


def test_info_of_a_cluto_set_by_its_name(tmp_path):
    """``cluto:tr31`` has a card of its own, found under its full name."""
    folder = tmp_path / "data" / "panel" / "cluto_karypis"
    folder.mkdir(parents=True)
    (folder / "tr31.mat").write_text("3 4 5\n1 2.00 2 1.00\n3 4.00\n2 1.00 4 1.00\n")
    (folder / "tr31.mat.rclass").write_text("301\n302\n301\n")
    output = ok("corpora", "info", "cluto:tr31", "--data-dir", tmp_path / "data")
    assert output.startswith("cluto:tr31: tr31 (CLUTO)") and "Zhao and G. Karypis" in output
    assert "corpora/tr31.mat.rclass" in output and "documents   3" in output
    assert "classes     2" in output
    assert "cluto:tr31" in ok("corpora", "list", "--data-dir", tmp_path / "data")


def test_a_corpus_without_a_download_says_so(tmp_path):
    data = tmp_path / "data"
    output = " ".join(ok("corpora", "info", "agnews", "--data-dir", data).split())
    assert "source: no download reproduces the files" in output
    assert "put agnews.csv.gz into one of these folders by hand" in output
    output = " ".join(fails("corpora", "fetch", "agnews", "--data-dir", data).split())
    assert "corpus 'agnews' cannot be downloaded" in output
    assert str(data / "panel" / "agnews") in output and "github.com/mhjabreel" in output
    assert not (data / "panel").exists()


def test_help_has_examples():
    for command in (["corpora", "--help"], ["corpora", "fetch", "--help"], ["cache", "--help"]):
        assert "Example" in ok(*command)


# -- fetch, from a local server -------------------------------------------------------------------


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def mini_card(tmp_path, monkeypatch, url, files):
    """Card ``mini`` downloading ``url`` and needing ``files`` (``{name: sha256 or ""}``)."""
    card_dir = tmp_path / "cards"
    card_dir.mkdir()
    (card_dir / "mini.toml").write_text(
        'name = "mini"\ntitle = "Mini"\ndescription = "A test corpus."\n'
        'homepage = "https://example.org"\nfolder = "mini"\nlabels = "none"\n'
        'labelled = false\nlicence = "none"\ncitation = "none"\n\n'
        f'[[sources]]\nurl = "{url}"\n\n[files]\n'
        + "".join(f'"{name}" = "{digest}"\n' for name, digest in files.items()),
        encoding="utf-8")
    monkeypatch.setattr(cards, "CARDS_DIR", card_dir)


@pytest.fixture
def test_card(tmp_path, monkeypatch):
    """A card ``mini`` whose source is served on 127.0.0.1; returns the served folder."""
    root = tmp_path / "www"
    root.mkdir()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0),
                                functools.partial(QuietHandler, directory=str(root)))
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    mini_card(tmp_path, monkeypatch, f"http://127.0.0.1:{httpd.server_address[1]}/a.txt",
              {"a.txt": hashlib.sha256(b"alpha").hexdigest()})
    yield root
    httpd.shutdown()
    httpd.server_close()


def test_fetch_installs_and_then_finds_the_corpus(tmp_path, test_card):
    (test_card / "a.txt").write_bytes(b"alpha")
    output = ok("corpora", "fetch", "mini", "--data-dir", tmp_path / "data")
    assert "downloaded http://127.0.0.1" in output and "1 file(s) installed" in output
    assert "%" not in output  # no progress bar off a terminal
    assert (tmp_path / "data" / "mini" / "a.txt").read_bytes() == b"alpha"
    assert "already present" in ok("corpora", "fetch", "mini", "--data-dir", tmp_path / "data")
    assert "yes" in ok("corpora", "list", "--data-dir", tmp_path / "data")


def test_fetch_with_a_checksum_mismatch_exits_2(tmp_path, test_card):
    (test_card / "a.txt").write_bytes(b"evil")
    output = fails("corpora", "fetch", "mini", "--data-dir", tmp_path / "data")
    assert "checksum mismatch for a.txt" in output and "not installed" in output
    assert not (tmp_path / "data" / "mini" / "a.txt").exists()


def test_fetch_of_a_missing_file_exits_2(tmp_path, test_card):
    output = fails("corpora", "fetch", "mini", "--data-dir", tmp_path / "data")
    assert "HTTP 404" in output and "by hand" in output


def test_fetch_says_which_files_are_verified(tmp_path, test_card):
    (test_card / "a.txt").write_bytes(b"alpha")
    output = ok("corpora", "fetch", "mini", "--data-dir", tmp_path / "data")
    assert "1 verified against the sha256 on the card" in " ".join(output.split())
    assert "not verified" not in output


def test_fetch_lists_unverified_files_clearly(tmp_path, monkeypatch):
    (tmp_path / "a.txt").write_bytes(b"alpha")
    mini_card(tmp_path, monkeypatch, (tmp_path / "a.txt").as_uri(), {"a.txt": ""})
    output = " ".join(ok("corpora", "fetch", "mini", "--data-dir", tmp_path / "data").split())
    assert "1 file(s) installed" in output and "0 verified" in output
    assert "not verified (no sha256 on the card): a.txt" in output


def test_fetch_refuses_an_archive_with_a_link_and_exits_2(tmp_path, monkeypatch):
    """The archive whose link ``top/sub -> ..`` would point at the data folder once ``top/`` is
    stripped."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("top/a.txt")
        info.size = 5
        tar.addfile(info, io.BytesIO(b"alpha"))
        info = tarfile.TarInfo("top/sub")
        info.type, info.linkname = tarfile.SYMTYPE, ".."
        tar.addfile(info)
    (tmp_path / "pack.tar.gz").write_bytes(buffer.getvalue())
    mini_card(tmp_path, monkeypatch, (tmp_path / "pack.tar.gz").as_uri(), {"a.txt": ""})
    output = " ".join(fails("corpora", "fetch", "mini", "--data-dir", tmp_path / "data").split())
    assert "refusing to extract pack.tar.gz" in output and "'top/sub'" in output
    assert "symbolic link" in output
    assert list((tmp_path / "data").iterdir()) == []


def test_fetch_of_a_truncated_download_exits_2(tmp_path, monkeypatch, liar):
    mini_card(tmp_path, monkeypatch, f"{liar}/short/a.bin", {"a.bin": ""})
    output = " ".join(fails("corpora", "fetch", "mini", "--data-dir", tmp_path / "data").split())
    assert "150,000 of 300,000 bytes" in output and "Nothing was installed" in output
    assert not (tmp_path / "data" / "mini").exists()


def test_fetch_of_a_corrupt_archive_exits_2(tmp_path, monkeypatch):
    (tmp_path / "pack.tar.xz").write_bytes(CORRUPT["xz-corrupt"][1])
    mini_card(tmp_path, monkeypatch, (tmp_path / "pack.tar.xz").as_uri(), {"a.txt": ""})
    output = " ".join(fails("corpora", "fetch", "mini", "--data-dir", tmp_path / "data").split())
    assert "pack.tar.xz is not a readable archive" in output and "--force" in output


# -- cache ----------------------------------------------------------------------------------------


def test_cache_info_and_clear(tmp_path):
    data = write_tdt2(tmp_path / "data")
    ok("corpora", "info", "tdt2", "--data-dir", data)
    output = ok("cache", "info")
    assert f"cache: {tmp_path / 'cache'} (caching on)" in output
    assert "1 entries" in output and "corpus" in output and "tdt2 (" in output
    assert "removed 1 entries" in ok("cache", "clear")
    assert "0 entries" in ok("cache", "info")


def test_cache_clear_stale_keeps_current_entries(tmp_path):
    ok("corpora", "info", "tdt2", "--data-dir", write_tdt2(tmp_path / "data"))
    assert "removed 0 entries" in ok("cache", "clear", "--stale")
    output = ok("cache", "info")
    assert "1 entries, " in output and "stale (built" not in output
    assert not output.rstrip().endswith("stale")
