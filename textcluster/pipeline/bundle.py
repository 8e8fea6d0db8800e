"""A fitted model saved to a folder — a *bundle* — and loaded back to place new documents.

A bundle holds everything that turns new documents into clusters, and nothing that would run
code when it is read:

``bundle.json``
    the format and the versions that wrote it, the model (registry name, class, parameters,
    ``k``), the preprocessing, the training corpus, the clusters (id, size, top terms), how
    the scores are computed, the SHA-256 of ``arrays.npz`` and a checksum of its own content.
``arrays.npz``
    (``np.savez``, read with ``allow_pickle=False``): the vocabulary (fixed-width unicode) and
    idf of the fitted :class:`~textcluster.text.tfidf.Vectorizer`, the model's fitted state
    (``model.fitted_state()``; a sparse matrix as its ``data``/``indices``/``indptr``/
    ``shape``) and the cluster centroids the scores are measured against.

:func:`save_model` writes a bundle into a temporary folder beside the target and renames it
into place, so a bundle is never half-written. :func:`load_model` refuses, with a
:class:`~textcluster._errors.BundleError` that says what to do, a bundle with a file missing,
one altered since it was written (either checksum), one whose format or textcluster
``major.minor`` version it cannot read, or one naming an unknown model.

:meth:`Bundle.assign` vectorizes new documents with the training vocabulary and idf
(:func:`.prepare.vectorize`), assigns them with ``model.predict`` and scores them as
``clusters.csv`` does: ``1 − d_own / d_next`` against the training clusters' centroids in the
space the clusters were read in (the document factor — its unit rows for ``assign="cosine"`` —
or the tf-idf rows of the k-means models). A bundle loaded in another process assigns bit for
bit as the model it was saved from.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .. import __version__
from .._errors import BundleError, InvalidInputError
from ..assign import cluster_means, scores_against
from ..corpora import Corpus
from ..models import MODELS, chosen_settings
from ..text.tfidf import Vectorizer
from . import export
from .export import score_rows
from .job import JobResult
from .prepare import vectorize

FORMAT = "textcluster-model"
FORMAT_VERSION = 1
JSON_FILE = "bundle.json"
ARRAYS_FILE = "arrays.npz"
ASSIGN_FILE = "assign.json"
N_TOP_TERMS = 10
_SAVE_HINT = "save it again with textcluster run ... --save-model DIR"


@dataclass
class AssignResult:
    """New documents placed in a bundle's clusters."""

    corpus: Corpus  # the documents assigned (those left out as empty are not)
    X: sp.csr_matrix  # their rows in the training columns
    labels: np.ndarray  # cluster id of each
    scores: np.ndarray  # confidence of each, in [0, 1]
    dropped: list[str] = field(default_factory=list)  # ids left out: no known term

    @property
    def n_docs(self) -> int:
        """The documents given, assigned or left out."""
        return len(self.labels) + len(self.dropped)

    def frame(self) -> pd.DataFrame:
        """``doc_id, cluster, label, score``: the columns of ``clusters.csv``."""
        corpus = self.corpus
        return pd.DataFrame({
            "doc_id": corpus.ids,
            "cluster": self.labels,
            "label": corpus.labels if corpus.labels is not None else "",
            "score": np.round(self.scores, 6),
        })

    def counts(self) -> dict[int, int]:
        """Documents per cluster (every cluster id that got one)."""
        ids, n = np.unique(self.labels, return_counts=True)
        return {int(c): int(m) for c, m in zip(ids, n)}


@dataclass
class Bundle:
    """A fitted model with what places new documents in its clusters (see the module
    docstring); ``meta`` is the content of ``bundle.json``, ``path`` the folder it was loaded
    from (None in memory)."""

    model: Any
    vectorizer: Vectorizer
    centroids: np.ndarray  # k × d: each fitted cluster's mean training row, in the score space
    sizes: np.ndarray  # training documents per fitted cluster (k,)
    cluster_ids: np.ndarray  # the id of each fitted cluster in the run's output (k,)
    meta: dict
    path: Path | None = None

    @property
    def model_name(self) -> str:
        return self.meta["model"]["name"]

    @property
    def k(self) -> int:
        return int(self.meta["k"])

    @classmethod
    def from_result(cls, result: JobResult, n_terms: int = N_TOP_TERMS) -> Bundle:
        """The bundle of a finished run, in memory (:meth:`save` writes it)."""
        rep, model = result.representation, result.model
        if rep.vectorizer is None:
            raise InvalidInputError(
                f"the model of corpus {result.corpus.name!r} cannot be saved: its vocabulary "
                f"names a term twice, so new documents' terms could not be matched to columns")
        if not hasattr(model, "fitted_state"):
            raise InvalidInputError(
                f"model {result.job.model!r} cannot be saved yet: it has no fitted_state()")
        fitted = np.asarray(getattr(model, "labels_", result.labels))
        k = max(int(result.k), int(fitted.max()) + 1)
        cluster_ids = _output_ids(fitted, np.asarray(result.labels), k)
        rows = score_rows(model, result.X, result.embedding)
        centroids, sizes = cluster_means(rows, fitted, k)
        meta = _describe(result, cluster_ids, sizes, n_terms)
        meta["score"]["dimensions"] = int(centroids.shape[1])
        return cls(model, rep.vectorizer, centroids, sizes, cluster_ids, meta)

    def assign(self, documents: Corpus | Iterable[str]) -> AssignResult:
        """Place ``documents`` (a :class:`Corpus` of texts or of counts over a vocabulary, or
        texts) in the clusters; documents without a known term follow the training's
        ``empty_documents`` (left out with a warning, or an error)."""
        corpus = documents if isinstance(documents, Corpus) else _texts_corpus(documents)
        X, kept, dropped = vectorize(corpus, self.vectorizer)
        fitted, rows = predict_with_rows(self.model, X)
        scores = scores_against(rows, fitted, self.centroids, self.sizes)
        return AssignResult(kept, X, self.cluster_ids[fitted], scores, dropped)

    def save(self, folder: str | os.PathLike) -> Path:
        """Write the bundle into ``folder`` (made, or replaced when it holds a bundle)
        through a temporary folder beside it and a rename."""
        target = check_target(folder)
        arrays, layout = self._arrays()
        meta = {**self.meta, "state": layout}
        tmp = target.parent / f".{target.name}.{uuid.uuid4().hex}.tmp"
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp.mkdir()
        try:
            np.savez(tmp / ARRAYS_FILE, **arrays)
            meta["arrays"] = {"file": ARRAYS_FILE, "sha256": _file_sha256(tmp / ARRAYS_FILE)}
            meta["checksum"] = _json_checksum(meta)
            text = json.dumps(meta, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
            (tmp / JSON_FILE).write_text(text, encoding="utf-8")
            export.replace_folder(tmp, target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        self.meta, self.path = meta, target
        return target

    def _arrays(self) -> tuple[dict[str, Any], dict[str, dict]]:
        arrays = {"vectorizer.vocabulary": np.asarray(self.vectorizer.vocabulary, dtype=str),
                  "vectorizer.idf": self.vectorizer.idf,
                  "score.centroids": self.centroids, "score.sizes": self.sizes,
                  "clusters.ids": self.cluster_ids}
        layout = {}
        for name, value in self.model.fitted_state().items():
            layout[name] = _store(f"state.{name}", value, arrays)
        return arrays, layout


def save_model(result: JobResult, folder: str | os.PathLike) -> Path:
    """Save the fitted model of ``result`` (``textcluster.run(...)``) as a bundle in
    ``folder``; returns the folder. See :mod:`textcluster.pipeline.bundle`."""
    return Bundle.from_result(result).save(folder)


def load_model(folder: str | os.PathLike) -> Bundle:
    """The bundle saved in ``folder``, checked (files, versions, checksums) and its model
    rebuilt; raises :class:`~textcluster._errors.BundleError` when it cannot be used."""
    folder = Path(folder)
    where = f"model bundle {str(folder)!r}"
    if not folder.is_dir():
        raise BundleError(f"{where} is not a folder: give the folder --save-model wrote")
    for name in (JSON_FILE, ARRAYS_FILE):
        if not (folder / name).is_file():
            raise BundleError(f"{where} has no {name}: it is incomplete or not a bundle; "
                              f"{_SAVE_HINT}")
    meta = _read_meta(folder / JSON_FILE, where)
    _check_compatible(meta, where)
    _check_checksums(meta, folder, where)
    cls = _model_class(meta, where)
    try:
        with np.load(folder / ARRAYS_FILE, allow_pickle=False) as arrays:
            vectorizer = Vectorizer(
                arrays["vectorizer.vocabulary"], arrays["vectorizer.idf"],
                meta["vectorizer"]["weighting"], meta["vectorizer"]["dtype"],
                meta["preprocess"], meta["vectorizer"]["source"])
            centroids, sizes = arrays["score.centroids"], arrays["score.sizes"]
            cluster_ids = arrays["clusters.ids"]
            state = {name: _restore(f"state.{name}", spec, arrays)
                     for name, spec in meta["state"].items()}
        model = cls.from_fitted_state(meta["model"]["params"], state)
    except (KeyError, ValueError, TypeError, OSError) as exc:
        raise BundleError(f"{where} cannot be read ({type(exc).__name__}: {exc}); it is "
                          f"damaged or was not written by textcluster; {_SAVE_HINT}") from None
    k = meta["k"]
    if (centroids.shape != (k, meta["score"]["dimensions"]) or sizes.shape != (k,)
            or cluster_ids.shape != (k,)):
        raise BundleError(f"{where}: the clusters' arrays do not match k = {k}; {_SAVE_HINT}")
    return Bundle(model, vectorizer, centroids, sizes, cluster_ids, meta, folder)


def check_save(folder: str | os.PathLike, model_name: str) -> Path:
    """Fail before a long run when its model could not be saved into ``folder``."""
    target = check_target(folder)
    if not hasattr(MODELS.get(model_name), "fitted_state"):
        raise InvalidInputError(f"model {model_name!r} cannot be saved as a bundle yet (it "
                                f"has no fitted_state)")
    return target


def check_target(folder: str | os.PathLike) -> Path:
    """``folder`` as a place to save a bundle: new, empty, or holding a bundle (replaced);
    a folder with other files is refused (checked before a long run too)."""
    target = Path(folder)
    if target.exists() and not target.is_dir():
        raise InvalidInputError(f"--save-model {str(target)!r} is a file; give a folder")
    if target.is_dir() and any(target.iterdir()) and not (target / JSON_FILE).is_file():
        raise InvalidInputError(
            f"--save-model {str(target)!r} is a folder holding other files, not a model "
            f"bundle; give a new or empty folder (a bundle there is replaced)")
    return target


# -- the score space ------------------------------------------------------------------------------


def _output_ids(fitted, labels, k):
    """The output id of each of the ``k`` fitted clusters: the run's ``labels`` may renumber
    the model's (``--align-to``); a fitted cluster without documents gets an unused id."""
    ids = np.full(k, -1, dtype=np.int64)
    pairs = np.unique(np.column_stack([fitted, labels]), axis=0)
    if len(pairs) != len(np.unique(fitted)) or len(pairs) != len(np.unique(labels)):
        raise InvalidInputError("the run's cluster ids are not a renumbering of the model's "
                                "clusters; the model cannot be saved with them")
    ids[pairs[:, 0]] = pairs[:, 1]
    used = set(pairs[:, 1].tolist())
    unused = (c for c in itertools.count() if c not in used)
    for f in np.flatnonzero(ids < 0):
        ids[f] = next(unused)
    return ids


def predict_with_rows(model: Any, X: Any) -> tuple[np.ndarray, Any]:
    """``model.predict(X)`` and :func:`score_rows` of ``X``; a factorization model's
    document factor is solved once for both (its ``predict`` is its assignment rule applied
    to ``transform``)."""
    rule = getattr(model, "assignment_rule", None)
    if rule is None or hasattr(model, "_represent"):
        return np.asarray(model.predict(X)), score_rows(model, X)
    embedding = model.transform(X)
    return np.asarray(rule().predict(embedding)), score_rows(model, X, embedding)


def _score_space(model):
    if hasattr(model, "_represent"):
        return "tf-idf rows" if getattr(model, "svd_", None) is None else "LSI projection"
    unit = model.assignment_rule().method == "cosine"
    return "document factor, unit rows" if unit else "document factor"


# -- bundle.json ----------------------------------------------------------------------------------


def _describe(result, cluster_ids, sizes, n_terms):
    """``bundle.json`` less the state layout and the checksums."""
    k = len(cluster_ids)
    model, vec = result.model, result.representation.vectorizer
    terms = export.top_terms(result, n_terms=n_terms)
    top = {int(c): list(group["term"]) for c, group in terms.groupby("cluster")}
    return {
        "format": FORMAT, "format_version": FORMAT_VERSION,
        "versions": export.versions(),
        "model": {"name": result.job.model, "class": type(model).__name__,
                  "params": _json_params(result.job.model, model.get_params()),
                  "chosen": chosen_settings(model)},
        "k": k,
        "preprocess": vec.options,
        "vectorizer": {"weighting": vec.weighting, "dtype": vec.dtype, "source": vec.source,
                       "n_terms": vec.n_terms},
        "corpus": {"name": result.job.corpus, "n_docs": int(len(result.labels)),
                   "options": result.job.selection.get("select", {}),
                   "dropped_documents": len(result.representation.dropped_docs)},
        "clusters": [{"id": int(c), "fit_id": f, "size": int(sizes[f]),
                      "top_terms": top.get(int(c), [])} for f, c in enumerate(cluster_ids)],
        "score": {"space": _score_space(model), "dimensions": None},
    }


def _json_params(name, params):
    """The model's parameters as JSON values (NumPy scalars as numbers); others refused."""
    out = {}
    for key, value in params.items():
        if isinstance(value, np.generic):
            value = value.item()
        if not isinstance(value, (bool, int, float, str, type(None))):
            raise InvalidInputError(
                f"model {name!r} cannot be saved: its parameter {key}={value!r} is not a "
                f"number, string, boolean or None")
        out[key] = value
    return out


def _json_checksum(meta):
    """SHA-256 of ``meta`` without its ``checksum``, as canonical JSON."""
    content = {key: value for key, value in meta.items() if key != "checksum"}
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _file_sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _read_meta(path, where):
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BundleError(f"{where}: {JSON_FILE} is not valid JSON ({exc}); it is damaged; "
                          f"{_SAVE_HINT}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise BundleError(f"{where}: {JSON_FILE} is not a textcluster model bundle; "
                          f"{_SAVE_HINT}")
    return meta


def _major_minor(version):
    return ".".join(str(version).split(".")[:2])


def _check_compatible(meta, where):
    """The format version and textcluster's major.minor, before anything else is read."""
    version = meta.get("format_version")
    written_by = str((meta.get("versions") or {}).get("textcluster", "unknown"))
    if not isinstance(version, int) or isinstance(version, bool):
        raise BundleError(f"{where}: {JSON_FILE} has no format version; {_SAVE_HINT}")
    if version > FORMAT_VERSION:
        raise BundleError(
            f"{where} is incompatible: it has bundle format {version}, written by textcluster "
            f"{written_by}, and this textcluster ({__version__}) reads format "
            f"{FORMAT_VERSION} only. Upgrade textcluster, or refit the model with this one "
            f"(textcluster run ... --save-model DIR)")
    if version < FORMAT_VERSION:
        raise BundleError(f"{where} is incompatible: bundle format {version} is no longer "
                          f"read (this textcluster reads format {FORMAT_VERSION}); "
                          f"{_SAVE_HINT}")
    if _major_minor(written_by) != _major_minor(__version__):
        raise BundleError(
            f"{where} is incompatible: it was written by textcluster {written_by}, and this "
            f"textcluster ({__version__}) reads bundles of version {_major_minor(__version__)}"
            f".x only. Load it with textcluster {_major_minor(written_by)}, or refit the "
            f"model with this one (textcluster run ... --save-model DIR)")


def _check_checksums(meta, folder, where):
    if meta.get("checksum") != _checksum_or_none(meta):
        raise BundleError(
            f"{where} was altered: {JSON_FILE} does not match its checksum (it was edited or "
            f"damaged after it was written). Do not edit a bundle; {_SAVE_HINT}")
    expected = (meta.get("arrays") or {}).get("sha256")
    if expected != _file_sha256(folder / ARRAYS_FILE):
        raise BundleError(
            f"{where} was altered: {ARRAYS_FILE} does not match the SHA-256 recorded in "
            f"{JSON_FILE} (it was changed, replaced or damaged after it was written); "
            f"{_SAVE_HINT}")


def _checksum_or_none(meta):
    try:
        return _json_checksum(meta)
    except ValueError:  # a non-finite number: nothing json.dumps wrote
        return None


def _model_class(meta, where):
    name = (meta.get("model") or {}).get("name")
    if name not in MODELS:
        raise BundleError(
            f"{where} holds a model named {name!r}, which this textcluster does not know "
            f"(its models: {', '.join(MODELS.names())}); load it with the textcluster that "
            f"wrote it ({(meta.get('versions') or {}).get('textcluster', 'unknown')})")
    cls = MODELS.get(name)
    if not hasattr(cls, "from_fitted_state"):
        raise BundleError(f"{where}: model {name!r} cannot be rebuilt from a bundle by this "
                          f"textcluster ({__version__})")
    return cls


# -- arrays.npz -----------------------------------------------------------------------------------


def _store(key, value, arrays):
    """Put one state value into ``arrays`` under ``key`` (a sparse matrix as four arrays);
    returns how to read it back."""
    if sp.issparse(value):
        matrix = value if value.format in ("csr", "csc") else value.tocsr()
        arrays.update({f"{key}.data": matrix.data, f"{key}.indices": matrix.indices,
                       f"{key}.indptr": matrix.indptr,
                       f"{key}.shape": np.asarray(matrix.shape, dtype=np.int64)})
        return {"kind": "sparse", "format": matrix.format,
                "array": isinstance(matrix, sp.sparray)}
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise InvalidInputError(f"the fitted state {key} holds Python objects; a bundle "
                                    f"holds only numbers and strings")
        arrays[key] = value
        return {"kind": "array"}
    kinds = {bool: "bool", int: "int", float: "float", str: "str"}
    kind = next((k for t, k in kinds.items() if type(value) is t), None)
    if kind is None:
        raise InvalidInputError(f"the fitted state {key} is a {type(value).__name__}, not "
                                f"an array, number or string")
    arrays[key] = np.asarray(value)
    return {"kind": kind}


def _restore(key, spec, arrays):
    kind = spec["kind"]
    if kind == "sparse":
        shape = tuple(int(n) for n in arrays[f"{key}.shape"])
        parts = (arrays[f"{key}.data"], arrays[f"{key}.indices"], arrays[f"{key}.indptr"])
        if spec["format"] not in ("csr", "csc"):
            raise ValueError(f"{key}: unknown sparse format {spec['format']!r}")
        kinds = {("csr", False): sp.csr_matrix, ("csc", False): sp.csc_matrix,
                 ("csr", True): sp.csr_array, ("csc", True): sp.csc_array}
        matrix = kinds[spec["format"], bool(spec.get("array"))](parts, shape=shape)
        matrix.check_format(full_check=True)
        return matrix
    value = arrays[key]
    if kind == "array":
        return value
    convert = {"bool": bool, "int": int, "float": float, "str": str}.get(kind)
    if convert is None or value.ndim != 0:
        raise ValueError(f"{key}: unknown kind {kind!r}")
    return convert(value[()])


# -- writing --------------------------------------------------------------------------------------


def write_assignment(assigned: AssignResult, bundle: Bundle, out_dir: str | os.PathLike,
                     source: str = "") -> Path:
    """Write ``clusters.csv`` (the columns of a run's) and ``assign.json`` (the bundle, the
    documents, the counts per cluster, the documents left out) into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    record = {
        "bundle": None if bundle.path is None else str(bundle.path),
        "model": bundle.model_name, "k": bundle.k,
        "trained_on": bundle.meta["corpus"]["name"],
        "documents": {"source": source, "name": assigned.corpus.name,
                      "given": assigned.n_docs, "assigned": len(assigned.labels)},
        "counts": {str(c): n for c, n in assigned.counts().items()},
        "dropped_documents": assigned.dropped,
        "score": bundle.meta["score"]["space"],
        "versions": export.versions(),
    }
    text = json.dumps(record, indent=2, ensure_ascii=False) + "\n"
    export.atomic_write(out / "clusters.csv", assigned.frame().to_csv(index=False))
    export.atomic_write(out / ASSIGN_FILE, text)
    return out


def _texts_corpus(texts):
    texts = list(texts)
    if not all(isinstance(t, str) for t in texts):
        raise InvalidInputError("assign takes a Corpus or a list of texts (strings)")
    return Corpus("documents", ids=np.array([f"doc{i}" for i in range(len(texts))]),
                  texts=texts)
