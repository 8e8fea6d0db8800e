"""Property-based fuzzing of every corpus loader (Hypothesis).

Each loader gets small valid files, then mutated ones (truncated, random bytes inserted or
overwritten, lines dropped or repeated, huge numbers, NaN and infinity, other encodings,
compressed or not) and generated ones (wrong shapes, empty and degenerate corpora). Whatever
the input, a load gives either a :class:`~textcluster.corpora.corpus.Corpus` or the project's own error
(:class:`~textcluster._errors.TextclusterError`) naming the file, never another exception; a
corpus is then represented (tf-idf) without NaN or infinity, read back equal from the cache,
and for some properties run end to end with the result files checked.

The budget is Hypothesis' profile (tests/conftest.py): ``ci`` by default, ``long`` on demand:
``HYPOTHESIS_PROFILE=long python -m pytest tests/test_fuzz_loaders.py``.
"""

import gzip
import io
import json
import math
import os
import tempfile
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.io
import scipy.sparse as sp
from hypothesis import example, given
from hypothesis import strategies as st

import textcluster
from textcluster.pipeline import export

from textcluster import pipeline
from textcluster._errors import InvalidInputError, TextclusterError
from textcluster.corpora.corpus import Corpus
from textcluster.corpora.loaders import load_libsvm

from ._citeulike import write_citeulike

# -- what every load must give ---------------------------------------------------------------------


@contextmanager
def workdir():
    """A fresh folder per example (pytest's tmp_path is one per test, not per example)."""
    with tempfile.TemporaryDirectory(prefix="fuzz-") as folder:
        yield Path(folder)


def outcome(load, where, run=None):
    """Load; a corpus must be sound, an error must be ours and name one of ``where``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            corpus = load()
    except TextclusterError as exc:
        message = str(exc)
        assert any(str(w) in message for w in where), (message, where)
        return None
    check_corpus(corpus)
    check_cached(load, corpus)
    rep = represented(corpus)
    if rep is not None and run is not None:
        run(rep)
    return corpus


def check_corpus(corpus):
    assert isinstance(corpus, Corpus)
    n = corpus.n_docs
    assert n >= 1 and len(set(corpus.ids.tolist())) == n, "ids must be unique"
    for strings in (corpus.ids, corpus.labels, corpus.vocabulary, corpus.texts, [corpus.name]):
        for text in [] if strings is None else strings:
            str(text).encode("utf-8")  # every output can hold it
    if corpus.matrix is not None:
        assert corpus.matrix.shape[0] == n and np.isfinite(corpus.matrix.data).all()
        assert corpus.matrix.nnz == 0 or corpus.matrix.data.min() >= 0


def check_cached(load, corpus):
    """A second load (from the cache when the loader goes through it) gives the same corpus."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = load()
    assert again.ids.tolist() == corpus.ids.tolist() and again.texts == corpus.texts
    assert (again.labels is None) == (corpus.labels is None)
    if corpus.labels is not None:
        assert again.labels.tolist() == corpus.labels.tolist()
    if corpus.matrix is not None:
        assert (again.matrix != corpus.matrix).nnz == 0


def represented(corpus):
    """The tf-idf representation, or ``None`` when the pipeline refuses the corpus (with our
    error naming it)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rep = pipeline.represent(corpus)
    except InvalidInputError as exc:
        assert repr(corpus.name) in str(exc), str(exc)
        return None
    assert rep.X.shape[0] >= 2 and np.isfinite(rep.X.data).all() and rep.X.data.min() >= 0
    lengths = np.asarray(rep.X.multiply(rep.X).sum(axis=1)).ravel()
    assert np.allclose(lengths, 1, atol=1e-3), "every document has unit length"
    return rep


FAST = {"kmeans": {"n_init": 1}, "nmf": {"n_init": 1, "max_iter": 15, "n_assign_init": 1}}


def run_and_export(name, model="kmeans", data_dir=None, **settings):
    """A property's ``run``: the whole pipeline on corpus ``name`` (k = 2), and its files."""
    def run(rep):
        with workdir() as out:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    result = textcluster.run(name, model, k=2, data_dir=data_dir,
                                          settings={**FAST[model], **settings})
            except InvalidInputError as exc:  # e.g. fewer than 2 distinct documents
                assert "distinct" in str(exc), str(exc)
                return
            export.write_run(result, out)
            check_outputs(out)
    return run


def check_outputs(out):
    """No NaN or infinity in any result file."""
    for name in ("metrics.json", "run.json"):
        json.loads((out / name).read_text(encoding="utf-8"),
                   parse_constant=lambda c: pytest.fail(f"{name} holds {c}"))
    clusters = pd.read_csv(out / "clusters.csv", keep_default_na=False)
    assert np.isfinite(clusters["score"].astype(float)).all()
    terms = pd.read_csv(out / "cluster_terms.csv", keep_default_na=False)
    assert np.isfinite(terms["weight"].astype(float)).all()


# -- mutations ---------------------------------------------------------------------------------------

TOKENS = [b"", b"0", b"-1", b"1.5", b"nan", b"NaN", b"inf", b"-Infinity", b"1e400", b"1e-320",
          b"10000000000", b"99999999999999999999", b"9223372036854775808", b"\x00", b"\xff",
          b"\xe9", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"&#55296;", b"&#xDFFF;", b"&#99999999;",
          b"\n", b"\r\n", b"\n\n", b" ", b"\t", b":", b",", b'"', b"[1, 2]", b"{}", b"null",
          b'"\\ud800"', b"<REUTERS", b"</REUTERS>", b"#", b"\\"]


@st.composite
def mutated(draw, seed: bytes):
    """``seed`` after a few random edits."""
    data = bytearray(seed)
    for _ in range(draw(st.integers(0, 4))):
        op = draw(st.sampled_from(["truncate", "insert", "overwrite", "delete", "lines"]))
        at = draw(st.integers(0, len(data)))
        if op == "truncate":
            del data[at:]
        elif op == "insert":
            data[at:at] = draw(st.sampled_from(TOKENS) | st.binary(max_size=8))
        elif op == "overwrite":
            chunk = draw(st.sampled_from(TOKENS) | st.binary(min_size=1, max_size=4))
            data[at:at + len(chunk)] = chunk
        elif op == "delete":
            del data[at:at + draw(st.integers(1, 16))]
        else:  # drop or repeat a line
            lines = bytes(data).split(b"\n")
            i = draw(st.integers(0, len(lines) - 1))
            lines[i:i + 1] = draw(st.sampled_from([[], [lines[i]] * 2]))
            data = bytearray(b"\n".join(lines))
    return bytes(data)


def variants(seed: bytes, gzipped=False):
    """A file's bytes: the seed mutated (then gzip-compressed when ``gzipped``), its compressed
    bytes mutated, random bytes, or nothing."""
    plain = mutated(seed)
    if gzipped:
        plain = plain.map(gzip.compress) | mutated(gzip.compress(seed))
    return plain | st.binary(max_size=64) | st.just(b"")


@st.composite
def corpus_files(draw, seeds, gzipped=()):
    """``{file name: bytes}``: the valid ``seeds``, with none, one or two of them replaced by
    :func:`variants` (names in ``gzipped`` are stored gzip-compressed)."""
    files = {name: gzip.compress(seed) if name in gzipped else seed
             for name, seed in seeds.items()}
    for name in draw(st.lists(st.sampled_from(sorted(seeds)), max_size=2, unique=True)):
        files[name] = draw(variants(seeds[name], gzipped=name in gzipped))
    return files


def write_files(folder, files):
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        if content is not None:
            (folder / name).write_bytes(content)


# -- Reuters-21578 SGML ----------------------------------------------------------------------------


def sgml_record(newid, topic, title, body, lewis="TRAIN"):
    return (f'<REUTERS TOPICS="YES" LEWISSPLIT="{lewis}" CGISPLIT="TRAINING-SET" '
            f'NEWID="{newid}">\n<TOPICS><D>{topic}</D></TOPICS>\n<TEXT>&#2;\n<TITLE>{title}'
            f"</TITLE>\n<BODY>{body} &amp; more\n&#3;</BODY></TEXT>\n</REUTERS>\n")


SGML = ('<!DOCTYPE lewis SYSTEM "lewis.dtd">\n'
        + sgml_record(1, "grain", "WHEAT CROP", "Wheat harvest rises in Kansas")
        + sgml_record(2, "earn", "PROFIT UP", "Quarterly profit beat estimates", "TEST")
        + sgml_record(3, "grain", "MAIZE", "Maize exports to Europe fell")
        + sgml_record(4, "earn", "DIVIDEND", "The dividend was raised")).encode("latin-1")


REUTERS = {"reut2-000.sgm.gz": SGML, "reut2-001.sgm": SGML.replace(b'NEWID="', b'NEWID="1')}


@given(files=corpus_files(REUTERS, gzipped={"reut2-000.sgm.gz"}))
@example(files={"reut2-000.sgm": SGML.replace(b"Maize", b"&#55296;Maize")})  # lone surrogate
@example(files={"reut2-000.sgm": SGML.replace(b"<REUTERS ", b"<REUTERS</REUTERS> ", 1)})
@example(files={"reut2-001.sgm": SGML})  # the same NEWIDs in two files
def test_reuters(files):
    with workdir() as data:
        write_files(data / "reuters21578", files)
        outcome(lambda: pipeline.load_corpus("reuters", data_dir=data, topics="any"),
                ["reut2-00", data / "reuters21578"])


# -- Deng Cai's MATLAB files (TDT2, Reuters) ------------------------------------------------------


def mat_bytes(**variables):
    with workdir() as folder:
        scipy.io.savemat(folder / "x.mat", variables)
        return (folder / "x.mat").read_bytes()


FEA = np.array([[1, 0, 2, 0, 1], [0, 3, 0, 1, 0], [4, 0, 0, 1, 2], [0, 0, 5, 0, 1],
                [1, 1, 0, 0, 3], [0, 2, 1, 1, 0]], dtype=float)
GND = np.array([[1], [2], [1], [2], [1], [2]])
MAT = mat_bytes(fea=sp.csc_matrix(FEA), gnd=GND)



def with_complex_flag(content, name=b"gnd"):
    """``content`` (a MAT-file v5) with the complex flag set on variable ``name``, which has no
    imaginary part."""
    at = 128
    while name not in content[at:at + 64]:
        at += 8 + int.from_bytes(content[at + 4:at + 8], "little")
    flags = at + 17  # the tag, the flags' tag, then the flags' second byte
    return content[:flags] + bytes([content[flags] | 0x08]) + content[flags + 1:]


numbers = st.sampled_from([0.0, 1.0, 2.0, 3.5, 1e300, 1e-300, -1.0, math.nan, math.inf])
matrices = st.tuples(st.integers(0, 6), st.integers(0, 5)).flatmap(
    lambda shape: st.lists(numbers, min_size=shape[0] * shape[1], max_size=shape[0] * shape[1])
    .map(lambda values: np.array(values).reshape(shape)))
classes = st.lists(st.sampled_from([1, 2, 3, 1.5, math.nan]), max_size=7).map(
    lambda values: np.array(values)[:, None])


@st.composite
def mat_files(draw):
    """Deng Cai .mat files: the seed mutated, or generated ``fea`` and ``gnd``."""
    if draw(st.booleans()):
        return draw(mutated(MAT))
    fea = draw(matrices)
    variables = {"fea": sp.csc_matrix(fea) if draw(st.booleans()) else fea, "gnd": draw(classes)}
    return mat_bytes(**{k: v for k, v in variables.items() if draw(st.booleans()) or k == "fea"})


@given(content=mat_files())
@example(content=mat_bytes(fea=sp.csc_matrix((6, 5)), gnd=GND))  # every feature zero
@example(content=mat_bytes(fea=np.ones((6, 5)), gnd=GND))  # every document the same
@example(content=mat_bytes(fea=sp.csc_matrix((np.ones(2), np.array([0, 10**6]), np.array([0, 1, 2])),
                                             shape=(6, 2)), gnd=GND))  # indices out of range
@example(content=mat_bytes(fea=sp.csc_matrix(FEA * 0.1), gnd=GND))  # 1 + ln tf < 0
@example(content=mat_bytes(fea=np.zeros((0, 5)), gnd=np.zeros((0, 1))))  # no document
@example(content=MAT[:248] + b"\xce" + MAT[249:])  # an unknown data type: scipy crashed
@example(content=with_complex_flag(mat_bytes(fea=sp.csc_matrix(FEA), gnd=GND, x=np.ones(2))))
# (above: an imaginary part announced but none there, another variable next: scipy crashed)
def test_deng_cai_mat(content):
    with workdir() as data:
        (data / "tdt2").mkdir()
        (data / "tdt2" / "TDT2.mat").write_bytes(content)
        outcome(lambda: pipeline.load_corpus("tdt2", data_dir=data), ["TDT2.mat"],
                run_and_export("tdt2", data_dir=data))


# -- LIBSVM and SECTOR -------------------------------------------------------------------------------

LIBSVM = b"1 1:0.5 3:1\n2 2:1 4:0.25\n1 1:1 2:0.5 # a comment\n2 3:0.5 4:1\n3 5:2\n"
libsvm_lines = st.lists(st.tuples(
    st.sampled_from(["1", "2", "-3", "1.5", "nan", "inf", "x"]),
    st.lists(st.tuples(st.sampled_from([0, 1, 2, 3, 7, 2**31 - 1, 2**31, 10**10, 10**20]),
                       st.sampled_from(["1", "0", "0.5", "-1", "nan", "1e400", "1e300"])),
             max_size=4)), max_size=6).map(lambda lines: "".join(
                 label + "".join(f" {i}:{v}" for i, v in pairs) + "\n"
                 for label, pairs in lines).encode())


@given(content=variants(LIBSVM) | libsvm_lines)
@example(content=b"1 1:0.5 10000000000:1\n2 1:1\n")  # an index beyond C int
@example(content=b"nan 1:0.5\ninf 2:1\n1 1:1\n")  # classes that are not numbers
@example(content=b"# only a comment\n")  # no document
@example(content=b"1 2147483647:1\n2 1:1\n")  # the largest index: no dense use of the shape
@example(content=b"0 1:1\n0 1:1e200\n")  # its square overflows: the row must still get length 1
def test_libsvm(content):
    with workdir() as data:
        path = data / "data.svm"
        path.write_bytes(content)
        outcome(lambda: load_libsvm([path]), ["data.svm"])


SECTOR = {"sector.scale": LIBSVM, "sector.t.scale": LIBSVM.replace(b"1 1:", b"2 1:")}


@given(files=corpus_files(SECTOR))
def test_sector(files):
    with workdir() as data:
        write_files(data / "sector", files)
        outcome(lambda: pipeline.load_corpus("sector", data_dir=data, min_class_size=None),
                ["sector.scale", "sector.t.scale", data / "sector"])


# -- CiteULike -----------------------------------------------------------------------------------


def citeulike_seeds(variant):
    with workdir() as root:
        return {p.name: p.read_bytes()
                for p in write_citeulike(root, variant, compress=False).iterdir()}


CITEULIKE = {variant: citeulike_seeds(variant) for variant in ("citeulike-t", "citeulike-a")}
citeulike_folders = st.sampled_from(sorted(CITEULIKE)).flatmap(
    lambda variant: st.tuples(st.just(variant), corpus_files(CITEULIKE[variant])))


@given(folder=citeulike_folders, view=st.sampled_from(["tags", "users", "terms", "combined"]))
@example(folder=("citeulike-t", {"users.dat": b"1 0\n1 99999999999999999999\n"}),
         view="users")  # an id beyond int64
@example(folder=("citeulike-t", {"users.dat": b""}), view="tags")  # no article kept: where?
def test_citeulike(folder, view):
    variant, files = folder
    with workdir() as root:
        target = write_citeulike(root, variant, compress=False)
        write_files(target, files)
        outcome(lambda: pipeline.load_corpus(f"{variant}:{view}", data_dir=root, min_count=2),
                [*files, target])


# -- CLUTO, both formats -----------------------------------------------------------------------------

CLUTO = {"set.mat.gz": b"4 5 7\n1 3 3 1.5\n2 2\n1 1 5 4\n4 2 5 1\n",
         "set.mat.rclass": b"a\nb\na\nb\n", "set.mat.clabel": b"apple\npear\nplum\nfig\nkiwi\n"}
CONVERTED = {"sparse_re0.txt": b"4 5\n2 0 3 2 1.5\n1 1 2\n2 0 1 4 4\n2 3 2 4 1\n",
             "re0_correct.txt.gz": b"1 0 1 0\n0 1 0 1\n", "re0.rclass": b"a\nb\na\nb\n"}
headers = st.lists(st.sampled_from([0, 1, 2, 4, 5, 7, 10**6, 2**40, 10**30]), min_size=2,
                   max_size=3).map(lambda h: " ".join(map(str, h)).encode() + b"\n")


@given(files=corpus_files(CLUTO, gzipped={"set.mat.gz"}), header=headers | st.none(),
       labels=st.booleans())
@example(files={"set.mat.gz": gzip.compress(b"2 10000000000000 2\n1 1\n9999999999999 2\n"),
                "set.mat.rclass": b"a\nb\n"}, header=None, labels=True)  # a huge vocabulary
@example(files=CLUTO, header=b"4 1000000000000000000000000000000 7\n", labels=True)
def test_cluto(files, header, labels):
    if header is not None:  # another header on the seed matrix
        body = CLUTO["set.mat.gz"].split(b"\n", 1)[1]
        files = {**files, "set.mat.gz": gzip.compress(header + body)}
    if not labels:
        files = {**files, "set.mat.rclass": None}
    with workdir() as data:
        write_files(data, files)
        outcome(lambda: pipeline.load_corpus(str(data / "set.mat.gz")), ["set.mat"])


@given(files=corpus_files(CONVERTED, gzipped={"re0_correct.txt.gz"}))
def test_cluto_converted(files):
    with workdir() as data:
        write_files(data / "panel" / "cluto_ntyaan", files)
        outcome(lambda: pipeline.load_corpus("cluto:re0", data_dir=data),
                ["sparse_re0.txt", "re0_correct.txt", "re0.rclass"],
                run_and_export("cluto:re0", "nmf", data_dir=data))


# -- tables: CSV, TSV, JSON Lines, JSON, Parquet; the panel's CSVs --------------------------------

ROWS = [{"id": "d1", "text": "Rocket launch to orbit", "label": "space"},
        {"id": "d2", "text": "Penalty in the last minute", "label": "sports"},
        {"id": "d3", "text": "Bake the pastry with butter", "label": "cooking"},
        {"id": "d4", "text": "A comet near the planet", "label": "space"}]
TABLES = {
    "csv": pd.DataFrame(ROWS).to_csv(index=False).encode(),
    "tsv": pd.DataFrame(ROWS).to_csv(index=False, sep="\t").encode(),
    "jsonl": "".join(json.dumps(r) + "\n" for r in ROWS).encode(),
    "json": json.dumps(ROWS).encode(),
}


def _workbook(rows):
    """An .xlsx file's bytes, made once: a workbook records when it was written, so drawing
    new ones would make the examples differ between a run and its replay."""
    buffer = io.BytesIO()
    pd.DataFrame(rows).to_excel(buffer, index=False)
    return buffer.getvalue()


TABLES["xlsx"] = _workbook(ROWS)
words = st.sampled_from(["rocket", "orbit", "pastry", "butter", "the", "and", "42", "", "é",
                         "\ud800", "\x00", ",", '"', "\n", "naïve", "ünïcode"])
cells = st.one_of(st.lists(words, max_size=4).map(" ".join), st.none(), st.integers(),
                  st.floats(allow_nan=True), st.booleans())
frames = st.lists(st.fixed_dictionaries({"text": cells}, optional={"label": cells, "id": cells}),
                  max_size=6)


@st.composite
def table_files(draw):
    """``(file name, bytes)``: a seed table mutated, or generated rows in some format."""
    fmt = draw(st.sampled_from(["csv", "tsv", "jsonl", "json", "parquet", "xlsx", "csv.gz"]))
    if fmt in TABLES and draw(st.booleans()):
        return f"docs.{fmt}", draw(mutated(TABLES[fmt]))
    rows = draw(frames)
    frame = pd.DataFrame(rows, dtype=object)
    if fmt == "xlsx":  # the seed workbook, mutated or not (see _workbook)
        return "docs.xlsx", draw(mutated(TABLES["xlsx"]))
    if fmt == "parquet":
        with workdir() as folder:
            try:
                frame.astype(str).to_parquet(folder / "x.parquet")
            except Exception:  # noqa: BLE001 - a frame pyarrow cannot store: mutate the seed
                pd.DataFrame(ROWS).to_parquet(folder / "x.parquet")
            content = (folder / "x.parquet").read_bytes()
        return "docs.parquet", draw(mutated(content)) if draw(st.booleans()) else content
    if fmt in ("jsonl", "json"):
        text = (json.dumps(rows) if fmt == "json"
                else "".join(json.dumps(r) + "\n" for r in rows))
        return f"docs.{fmt}", text.encode("utf-8", "surrogatepass")
    text = frame.to_csv(index=False, sep="\t" if fmt == "tsv" else ",")
    data = text.encode(draw(st.sampled_from(["utf-8", "latin-1", "utf-16"])), "replace")
    return f"docs.{fmt}", gzip.compress(data) if fmt.endswith(".gz") else data


@given(table=table_files())
@example(table=("docs.jsonl", b'{"text": "a b", "label": "x"}\n[1, 2]\n3\n'))  # not objects
@example(table=("docs.csv", b"text,id\nrocket orbit,\npastry oven,\x00\n"))  # ids "" and NUL
@example(table=("docs.jsonl", b'{"id": "d\\ud800", "text": "rocket orbit \\udfff"}\n'
                              b'{"id": "e", "text": "pastry butter"}\n'))  # lone surrogates
def test_table(table):
    name, content = table
    with workdir() as data:
        path = data / name
        path.write_bytes(content)
        outcome(lambda: pipeline.load_corpus(str(path)), [name],
                run_and_export(str(path), label_column="none"))


@given(content=variants(TABLES["csv"], gzipped=True))
def test_panel_table(content):
    with workdir() as data:
        (data / "panel" / "r8").mkdir(parents=True)
        (data / "panel" / "r8" / "r8.csv.gz").write_bytes(content)
        outcome(lambda: pipeline.load_corpus("r8", data_dir=data), ["r8.csv.gz"])


# -- a folder of text files --------------------------------------------------------------------------

file_names = st.sampled_from([b"a.txt", b"b.txt", b"caf\xe9.txt", b"\xff\xfe.txt", b".hidden.txt",
                              b"notes.md", b"x y.txt", b"sub.txt"])
contents = st.sampled_from([b"Rocket launch to orbit.", b"Bake the pastry.", b"", b"the and of",
                            "Crème brûlée".encode("latin-1"), b"\xef\xbb\xbfBOM text",
                            b"\x00\x01\x02", "naïve ünïcode".encode("utf-16")]) | st.binary(
                                max_size=16)
folders = st.lists(st.tuples(st.sampled_from([b"", b"space/", b"food/", b"caf\xe9/", b".git/"]),
                             file_names, contents), max_size=6)


@given(files=folders)
@example(files=[(b"space/", b"caf\xe9.txt", b"Rocket orbit."), (b"food/", b"a.txt", b"Pastry."),
                (b"food/", b"b.txt", b"Butter.")])  # a file name that is not UTF-8
def test_folder(files):
    with workdir() as data:
        root = data / "docs"
        root.mkdir()
        for sub, name, content in files:
            folder = os.fsencode(root) + b"/" + sub
            os.makedirs(folder, exist_ok=True)
            with open(folder + name, "wb") as handle:
                handle.write(content)
        outcome(lambda: pipeline.load_corpus(str(root)), [root],
                run_and_export(str(root)))
