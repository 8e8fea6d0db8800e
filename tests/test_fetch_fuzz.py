"""Fuzzing ``extract_archive``: generated and mutated archives (random members, names with
``..``, absolute names, links, special files, encrypted or unknown-method zip members,
truncations, flipped bytes, random bytes) either extract strictly inside the target folder or
raise the project's own error; never another exception, and nothing changes outside the folder.

The budget is the Hypothesis profile's (tests/conftest.py): "ci" by default,
HYPOTHESIS_PROFILE=long for a longer run.
"""

import io
import os
import stat
import tarfile
import tempfile
import warnings
import zipfile
from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st

from textcluster.corpora import fetch
from textcluster._errors import TextclusterError

MAX_BYTES = 1 << 20  # small limits, so that generated bombs are cheap
MAX_MEMBERS = 64

HOSTILE_NAMES = ["a.txt", "top/a.txt", "top/sub", "top/sub/b.txt", "..", "../x", "top/../../x",
                 "/abs", "/", ".", "./", "", "top/", "C:/x", "C:\\x", "..\\x", "a\\..\\..\\x",
                 "top/./c", "top//d", "x" * 300, "a\x00b", "top/sub/.", ".fetch.lock",
                 ".extract-0123456789abcdef", ".download-0123456789abcdef.part"]
plain_names = st.lists(st.sampled_from(["top", "docs", "a.txt", "b.sgm"]), min_size=1,
                       max_size=3).map("/".join)
names = st.one_of(  # half plain, so that mutations also hit archives that would extract
    plain_names,
    plain_names,
    st.sampled_from(HOSTILE_NAMES),
    st.lists(st.sampled_from(["top", "sub", "..", ".", "a.txt", "", "é", "/"]),
             min_size=1, max_size=4).map("/".join),
    st.text(max_size=12),
)
KINDS = ["file"] * 6 + ["dir"] * 2 + ["symlink", "hardlink", "fifo", "device"]
members = st.lists(st.tuples(st.sampled_from(KINDS), names, st.binary(max_size=3000), names),
                   max_size=8)
FORMATS = ["tar", "tar.gz", "tar.bz2", "tar.xz", "zip"]
damage = st.one_of(
    st.tuples(st.just("truncate"), st.floats(0, 1)),
    st.tuples(st.just("flip"), st.floats(0, 1), st.integers(1, 255)),
    st.tuples(st.just("overwrite"), st.floats(0, 1), st.binary(min_size=1, max_size=64)),
    st.tuples(st.just("append"), st.binary(max_size=256)),
)
mutations = st.one_of(st.none(), damage)


def tar_archive(entries, compression):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=f"w:{compression}" if compression else "w") as tar:
        for kind, name, data, target in entries:
            info = tarfile.TarInfo(name)
            info.type = {"file": tarfile.REGTYPE, "dir": tarfile.DIRTYPE,
                         "symlink": tarfile.SYMTYPE, "hardlink": tarfile.LNKTYPE,
                         "fifo": tarfile.FIFOTYPE, "device": tarfile.CHRTYPE}[kind]
            info.linkname = target if "link" in kind else ""
            info.size = len(data) if kind == "file" else 0
            try:
                info.tobuf(tar.format, tar.encoding, tar.errors)  # a name tar cannot store
            except (ValueError, UnicodeError):
                continue
            tar.addfile(info, io.BytesIO(data) if kind == "file" else None)
    return buffer.getvalue()


def zip_archive(entries, flags):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # duplicate names are wanted here
        for kind, name, data, target in entries:
            info = zipfile.ZipInfo(name + "/" if kind == "dir" and name else name)
            info.create_system = 3
            mode = {"file": stat.S_IFREG | 0o644, "dir": stat.S_IFDIR | 0o755,
                    "symlink": stat.S_IFLNK | 0o777, "hardlink": stat.S_IFREG | 0o644,
                    "fifo": stat.S_IFIFO | 0o644, "device": stat.S_IFCHR | 0o644}[kind]
            info.external_attr = mode << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, target.encode("utf-8", "replace") if kind == "symlink" else data)
    data = bytearray(buffer.getvalue())
    if flags:  # mark every member encrypted, or give it a compression method zipfile lacks
        flag_offset, method_offset, value = {"encrypted": (6, 8, None),
                                             "method": (8, 10, 99)}[flags]
        for signature, offset in ((b"PK\x03\x04", 0), (b"PK\x01\x02", 2)):
            start = data.find(signature)
            while start >= 0:
                if value is None:
                    data[start + flag_offset + offset] |= 1
                else:
                    data[start + method_offset:start + method_offset + 2] = value.to_bytes(2,
                                                                                        "little")
                start = data.find(signature, start + 4)
    return bytes(data)


def mutate(data, mutation):
    if mutation is None or not data:
        return data
    kind, *args = mutation
    at = min(int(args[0] * len(data)), len(data) - 1) if kind != "append" else 0
    if kind == "truncate":
        return data[:at]
    if kind == "flip":
        return data[:at] + bytes([data[at] ^ args[1]]) + data[at + 1:]
    if kind == "overwrite":
        return data[:at] + args[1] + data[at + len(args[1]):]
    return data + args[0]


def snapshot(root, skip):
    """Everything under ``root`` except ``skip``, links not followed."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            if path == skip or skip in path.parents:
                continue
            if path.is_symlink():
                found[path] = ("link", os.readlink(path))
            else:
                found[path] = ("dir", None) if path.is_dir() else ("file", path.read_bytes())
    return found


def assert_extracts_inside_or_refuses(data, filename):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        target = root / "data" / "corpus"
        target.mkdir(parents=True)
        (root / "data" / "other.txt").write_bytes(b"another corpus")
        (root / "outside").mkdir()
        archive = root / "downloads" / filename
        archive.parent.mkdir()
        archive.write_bytes(data)
        before = snapshot(root, target)
        try:
            names = fetch.extract_archive(archive, target, max_bytes=MAX_BYTES,
                                          max_members=MAX_MEMBERS)
        except TextclusterError as exc:
            assert filename in str(exc) or "corpus folder" in str(exc)
            names = None
        assert snapshot(root, target) == before, "something changed outside the folder"
        inside = os.path.realpath(target)
        for path in target.rglob("*"):
            assert not path.is_symlink(), f"a link was extracted: {path}"
            assert os.path.commonpath([os.path.realpath(path), inside]) == inside
            assert not path.name.startswith(".extract-"), "the staging folder was left"
        if names is None:
            assert list(target.iterdir()) == []  # refused: nothing installed
        else:
            assert all((target / name).is_file() for name in names)


@given(entries=members, fmt=st.sampled_from(FORMATS),
       zip_flags=st.sampled_from([None, None, None, "encrypted", "method"]),
       mutation=mutations)
@example(entries=[("file", "top/a.txt", b"alpha", ""), ("symlink", "top/sub", b"", "..")],
         fmt="tar.gz", zip_flags=None, mutation=None)
@example(entries=[("file", "top/a.txt", b"alpha", ""), ("symlink", "top/l1", b"", "l2"),
                  ("symlink", "top/l2", b"", "..")], fmt="tar", zip_flags=None, mutation=None)
@example(entries=[("file", "top/a.txt", b"alpha", ""), ("symlink", "top/sub", b"", "..")],
         fmt="zip", zip_flags=None, mutation=None)
@example(entries=[("file", "a", b"x", ""), ("file", "a/b", b"y", "")], fmt="tar",
         zip_flags=None, mutation=None)
@example(entries=[("file", "zeros.bin", bytes(2 * MAX_BYTES), "")], fmt="zip", zip_flags=None,
         mutation=None)
def test_generated_archives_extract_inside_or_are_refused(entries, fmt, zip_flags, mutation):
    if fmt == "zip":
        data = zip_archive(entries, zip_flags)
    else:
        data = tar_archive(entries, fmt.partition(".")[2])
    assert_extracts_inside_or_refuses(mutate(data, mutation), f"pack.{fmt}")


@given(entries=st.lists(st.tuples(st.sampled_from(["file", "file", "dir"]), plain_names,
                                  st.binary(max_size=3000), st.just("")), min_size=1,
                        max_size=6),
       fmt=st.sampled_from(FORMATS), mutation=damage)
def test_mutated_plain_archives_extract_inside_or_are_refused(entries, fmt, mutation):
    """Archives that would extract, damaged: the decompressors and parsers, not the member
    checks, meet the damage."""
    if fmt == "zip":
        data = zip_archive(entries, None)
    else:
        data = tar_archive(entries, fmt.partition(".")[2])
    assert_extracts_inside_or_refuses(mutate(data, mutation), f"pack.{fmt}")


MAGIC = [b"", b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff", b"BZh9", b"\xfd7zXZ\x00",
         b"PK\x03\x04", b"PK\x05\x06" + bytes(18), b"ustar\x0000"]


@given(prefix=st.sampled_from(MAGIC), body=st.binary(max_size=4096),
       fmt=st.sampled_from(FORMATS))
def test_random_bytes_are_refused_cleanly(prefix, body, fmt):
    assert_extracts_inside_or_refuses(prefix + body, f"pack.{fmt}")
