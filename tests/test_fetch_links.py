"""No archive, however built, makes a fetch write or link outside the corpus folder.

The attack: an archive with a single top folder holding ``top/sub -> ..`` looks harmless
(``top/..`` is the archive's root), but the top folder is stripped on the way in, so the link
would land as ``<corpus>/sub`` pointing at the data folder, and a later source (or a ``--force``
re-fetch) would be moved through it. Archives carry no links at all (see textcluster.corpora.fetch), and
files are never moved through a link already in the corpus folder.
"""

import os
import stat
import tarfile
import zipfile

import pytest

from textcluster.corpora import fetch
from textcluster._errors import CorpusFormatError

from .test_fetch import link, make_card, tar_bytes


def snapshot(root):
    """``{relative path: (kind, content)}`` of everything under ``root``, links not followed."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            relative = os.path.relpath(path, root)
            if os.path.islink(path):
                found[relative] = ("link", os.readlink(path))
            elif os.path.isdir(path):
                found[relative] = ("dir", None)
            else:
                with open(path, "rb") as handle:
                    found[relative] = ("file", handle.read())
    return found


@pytest.fixture
def world(tmp_path):
    """``<world>/data``, a data folder with another corpus in it, and ``<world>/outside``;
    returns ``(data folder, check)`` where ``check()`` asserts that nothing in the world
    outside the corpus folder ``data/mini`` changed and no link inside it points out of it.
    (The archives and cards are written beside the world, in ``tmp_path``.)"""
    root = tmp_path / "world"
    data = root / "data"
    (data / "other").mkdir(parents=True)
    (data / "other" / "keep.txt").write_bytes(b"other corpus")
    (root / "outside").mkdir()
    (root / "outside" / "keep.txt").write_bytes(b"outside")
    corpus = data / "mini"

    def outside_state():
        return {k: v for k, v in snapshot(root).items()
                if k.split(os.sep)[:2] != ["data", "mini"]}

    before = outside_state()

    def check(allowed_links=()):
        assert outside_state() == before
        if not corpus.is_dir():
            return
        inside = os.path.realpath(corpus)
        for relative, (kind, _) in snapshot(corpus).items():
            if relative in allowed_links:
                continue
            assert kind != "link", f"a link was installed: {relative}"
            resolved = os.path.realpath(corpus / relative)
            assert os.path.commonpath([resolved, inside]) == inside, relative

    return data, check


def zip_bytes(path, members):
    """Write a zip of ``(name, bytes)`` files and ``(name, target, "link")`` symbolic links."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for member in members:
            if len(member) == 3:
                info = zipfile.ZipInfo(member[0])
                info.create_system = 3
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
                zf.writestr(info, member[1])
            else:
                zf.writestr(*member)
    return path


# Each hides a link that is harmless before the top folder is stripped, or an outright one.
TAR_ARCHIVES = {
    "link-then-strip": [("top/a.txt", b"alpha"), link("top/sub", "..")],
    "link-to-itself": [("top/a.txt", b"alpha"), link("top/sub", ".")],
    "link-to-link": [("top/a.txt", b"alpha"), link("top/l1", "l2"), link("top/l2", "..")],
    "link-chain": [("top/a.txt", b"alpha"), ("top/d/x.txt", b"x"), link("top/d/up", ".."),
                   link("top/d/upup", "up/.."), link("top/far", "d/upup")],
    "deeper": [("top/a.txt", b"alpha"), link("top/sub", "../..")],
    "absolute": [("top/a.txt", b"alpha"), link("top/abs", "/tmp")],
    "hard-link": [("top/a.txt", b"alpha"), link("top/h.txt", "top/a.txt", tarfile.LNKTYPE)],
    "hard-link-then-strip": [("top/a.txt", b"alpha"), ("top/b.txt", b"b"),
                             link("top/c.txt", "top/b.txt", tarfile.LNKTYPE)],
    "link-then-file-through-it": [("top/a.txt", b"alpha"), link("top/sub", ".."),
                                  ("top/sub/evil.txt", b"evil")],
    "no-top-folder": [("a.txt", b"alpha"), ("b.txt", b"b"), link("sub", ".")],
}


@pytest.mark.parametrize("mode", ["w:gz", "w"])
@pytest.mark.parametrize("case", sorted(TAR_ARCHIVES))
def test_tar_with_links_is_refused_and_nothing_escapes(tmp_path, world, case, mode):
    data, check = world
    suffix = ".tar.gz" if mode == "w:gz" else ".tar"
    archive = tmp_path / f"pack{suffix}"
    archive.write_bytes(tar_bytes(TAR_ARCHIVES[case], mode=mode))
    card = make_card(tmp_path, [archive.as_uri()], {"a.txt": ""})
    with pytest.raises(CorpusFormatError) as info:
        fetch.fetch_corpus(card, data_dir=data)
    message = str(info.value)
    assert f"pack{suffix}" in message and "link" in message and "member" in message
    check()
    assert not (data / "mini").exists()  # nothing installed, the folder it made is gone


@pytest.mark.parametrize("members", [
    [("top/a.txt", b"alpha"), ("top/sub", "..", "link")],
    [("top/a.txt", b"alpha"), ("top/l1", "l2", "link"), ("top/l2", "..", "link")],
    [("a.txt", b"alpha"), ("abs", "/etc", "link")],
], ids=["link-then-strip", "link-to-link", "absolute"])
def test_zip_with_links_is_refused_and_nothing_escapes(tmp_path, world, members):
    data, check = world
    archive = zip_bytes(tmp_path / "pack.zip", members)
    card = make_card(tmp_path, [archive.as_uri()], {"a.txt": ""})
    with pytest.raises(CorpusFormatError, match=r"pack\.zip.*symbolic link"):
        fetch.fetch_corpus(card, data_dir=data)
    check()
    assert not (data / "mini").exists()


def test_extract_archive_alone_refuses_the_link_then_strip_archive(tmp_path):
    archive = tmp_path / "pack.tar"
    archive.write_bytes(tar_bytes(TAR_ARCHIVES["link-then-strip"], mode="w"))
    (tmp_path / "out").mkdir()
    with pytest.raises(CorpusFormatError, match=r"member 'top/sub'.*symbolic link"):
        fetch.extract_archive(archive, tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []


@pytest.mark.parametrize("force", [False, True], ids=["missing-file", "force"])
@pytest.mark.parametrize("target", ["..", "../../outside"], ids=["data-folder", "outside"])
def test_a_link_already_in_the_corpus_folder_is_never_followed(tmp_path, world, force, target):
    """A link left in the corpus folder (by hand, or by an earlier version of fetch) stops the
    fetch before anything is moved; nothing is written through it."""
    data, check = world
    folder = data / "mini"
    folder.mkdir()
    os.symlink(target, folder / "sub")
    if force:
        (folder / "a.txt").write_bytes(b"old")
    archive = tmp_path / "pack.tar.gz"
    archive.write_bytes(tar_bytes([("top/a.txt", b"alpha"), ("top/sub/evil.txt", b"evil")]))
    card = make_card(tmp_path, [archive.as_uri()], {"a.txt": ""})
    with pytest.raises(CorpusFormatError) as info:
        fetch.fetch_corpus(card, data_dir=data, force=force)
    message = " ".join(str(info.value).split())
    assert "symbolic link" in message and str(folder / "sub") in message
    assert "remove it" in message
    check(allowed_links={"sub"})
    assert not (data / "evil.txt").exists() and not (data.parent / "outside" / "evil.txt").exists()
    assert (folder / "a.txt").exists() == force  # nothing was moved: a.txt is not installed
    if force:
        assert (folder / "a.txt").read_bytes() == b"old"


def test_a_second_source_is_not_moved_through_a_link_of_the_first(tmp_path, world):
    data, check = world
    first, second = tmp_path / "first.tar.gz", tmp_path / "second.tar.gz"
    first.write_bytes(tar_bytes(TAR_ARCHIVES["link-then-strip"]))
    second.write_bytes(tar_bytes([("c.txt", b"c"), ("sub/evil.txt", b"evil")]))
    card = make_card(tmp_path, [first.as_uri(), second.as_uri()], {"a.txt": "", "c.txt": ""})
    with pytest.raises(CorpusFormatError, match=r"first\.tar\.gz.*symbolic link"):
        fetch.fetch_corpus(card, data_dir=data)
    check()
    assert not (data / "evil.txt").exists()


def test_force_refetch_after_a_refused_archive_stays_inside(tmp_path, world):
    """A good archive fetched, then fetched again with --force from a hostile one: refused, the
    good files stay as they were."""
    data, check = world
    good, bad = tmp_path / "good.tar.gz", tmp_path / "bad.tar.gz"
    good.write_bytes(tar_bytes([("top/a.txt", b"alpha"), ("top/docs/b.txt", b"b")]))
    bad.write_bytes(tar_bytes(TAR_ARCHIVES["link-then-file-through-it"]))
    fetch.fetch_corpus(make_card(tmp_path, [good.as_uri()], {"a.txt": ""}), data_dir=data)
    before = snapshot(data / "mini")
    with pytest.raises(CorpusFormatError, match="symbolic link"):
        fetch.fetch_corpus(make_card(tmp_path, [bad.as_uri()], {"a.txt": ""}), data_dir=data,
                           force=True)
    check()
    assert snapshot(data / "mini") == before


def test_a_file_link_in_the_corpus_folder_is_replaced_not_written_through(tmp_path, world):
    """``--force`` over ``a.txt -> ../../outside/keep.txt``: the link is replaced by the file,
    the file it pointed to is untouched."""
    data, check = world
    folder = data / "mini"
    folder.mkdir()
    os.symlink("../../outside/keep.txt", folder / "a.txt")
    archive = tmp_path / "pack.tar.gz"
    archive.write_bytes(tar_bytes([("top/a.txt", b"alpha")]))
    fetch.fetch_corpus(make_card(tmp_path, [archive.as_uri()], {"a.txt": ""}), data_dir=data,
                       force=True)
    check()
    assert not (folder / "a.txt").is_symlink() and (folder / "a.txt").read_bytes() == b"alpha"
