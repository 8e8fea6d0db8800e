"""Stable cluster ids: ``textcluster.pipeline.align`` and ``textcluster run --align-to``."""

import shutil

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from textcluster._errors import InvalidInputError
from textcluster.cli import main
from textcluster.pipeline.align import (CHANGES_COLUMNS, MOVED_COLUMNS, Centroids,
                                        align_labels, align_to_previous, read_previous)
from textcluster.pipeline.export import CENTROIDS_FILE

from ._corpora import VOCABULARIES, write_folder_corpus

FAST = ["--set", "n_init=2", "--set", "max_iter=30", "--set", "n_assign_init=3"]


def ids(n, prefix="d"):
    return np.array([f"{prefix}{i:04d}" for i in range(n)])


def status(alignment):
    """``{old_id or None: (new_id or None, status)}`` from the changes table."""
    frame = alignment.changes.astype(object).where(alignment.changes.notna(), None)
    return {(row.old_id, row.new_id): row.status for row in frame.itertuples()}


# -- matching on shared documents ------------------------------------------------------------


def test_permuted_labels_are_recovered_exactly():
    rng = np.random.default_rng(0)
    old = rng.integers(0, 6, size=300)
    permutation = rng.permutation(6)
    order = rng.permutation(300)  # the new run lists the documents in another order
    alignment = align_labels(ids(300)[order], permutation[old][order], ids(300), old)
    np.testing.assert_array_equal(alignment.labels, old[order])
    assert alignment.moved.empty and alignment.n_shared == 300
    assert alignment.mapping == {int(permutation[c]): c for c in range(6)}
    assert set(alignment.changes["status"]) == {"kept"}
    assert list(alignment.changes.columns) == CHANGES_COLUMNS
    assert (alignment.changes["overlap"] == alignment.changes["size_before"]).all()
    assert alignment.summary.endswith("6 clusters kept, 0 born, 0 gone; 100.0 % of the 300 "
                                      "shared documents kept their cluster")


def test_a_split_cluster_is_born_with_the_smallest_unused_id():
    old = np.array([0] * 10 + [2] * 10 + [5] * 10)  # ids 1, 3, 4 unused before
    new = np.array([7] * 10 + [3] * 6 + [4] * 4 + [0] * 10)  # old cluster 2 split in two
    alignment = align_labels(ids(30), new, ids(30), old)
    np.testing.assert_array_equal(alignment.labels, [0] * 10 + [2] * 6 + [1] * 4 + [5] * 10)
    assert status(alignment) == {(0, 0): "kept", (None, 1): "born", (2, 2): "kept",
                                 (5, 5): "kept"}
    born = alignment.changes.set_index("new_id").loc[1]
    assert born["size_before"] == 0 and born["size_after"] == 4 and born["fit_id"] == 4
    kept = alignment.changes.set_index("new_id").loc[2]
    assert (kept["size_before"], kept["size_after"], kept["overlap"]) == (10, 6, 6)
    assert len(alignment.moved) == 4 and set(alignment.moved["new_cluster"]) == {1}


def test_merged_clusters_leave_one_gone_and_no_overlap_is_no_match():
    old = np.array([0] * 10 + [1] * 10 + [2] * 10)
    new = np.array([5] * 20 + [6] * 10)  # old 0 and 1 merged
    alignment = align_labels(ids(30), new, ids(30), old)
    assert status(alignment) == {(0, 0): "kept", (1, None): "gone", (2, 2): "kept"}
    gone = alignment.changes[alignment.changes["status"] == "gone"].iloc[0]
    assert gone["size_before"] == 10 and gone["size_after"] == 0 and pd.isna(gone["fit_id"])
    assert "2 clusters kept, 0 born, 1 gone" in alignment.summary
    # A new cluster of new documents only overlaps nothing: born, even with an old id free.
    new2 = np.concatenate([old, [9] * 5])
    alignment = align_labels(np.concatenate([ids(30), ids(5, "x")]), new2, ids(30), old)
    assert status(alignment)[(None, 3)] == "born"
    assert alignment.changes.set_index("new_id").loc[3, "overlap"] == 0


def test_moved_documents_are_listed_with_both_ids():
    old = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2])
    new = np.array([1, 1, 2, 2, 2, 2, 0, 0, 0])  # doc d0002 moved from 0 to (aligned) 1
    alignment = align_labels(ids(9), new, ids(9), old)
    assert list(alignment.moved.columns) == MOVED_COLUMNS
    assert alignment.moved.to_dict("records") == [
        {"doc_id": "d0002", "old_cluster": 0, "new_cluster": 1}]
    assert alignment.n_kept_documents == 8
    assert "88.9 % of the 9 shared documents" in alignment.summary


def test_new_documents_are_not_counted_as_moved():
    old = np.array([0] * 5 + [1] * 5)
    new_ids = np.concatenate([ids(10), ids(3, "new")])
    alignment = align_labels(new_ids, np.array([1] * 5 + [0] * 5 + [0, 1, 1]), ids(10), old)
    np.testing.assert_array_equal(alignment.labels, [0] * 5 + [1] * 5 + [1, 0, 0])
    assert alignment.moved.empty and alignment.n_shared == 10
    sizes = alignment.changes.set_index("new_id")
    assert sizes.loc[0, "size_after"] == 7 and sizes.loc[0, "size_before"] == 5


# -- matching on centroids -------------------------------------------------------------------


def test_without_shared_documents_centroids_are_matched_on_the_shared_terms():
    old = Centroids(np.array([0, 1, 2]), np.array([[0.9, 0.1, 0.0, 0.5],
                                                   [0.0, 0.8, 0.2, 0.0],
                                                   [0.1, 0.0, 0.9, 0.0]]),
                    np.array(["apple", "ball", "cat", "gone"]))
    # The new run has its terms in another order, one old term missing and one new term.
    new = Centroids(np.array([0, 1, 2]), np.array([[0.0, 0.9, 0.1, 0.7],
                                                   [0.9, 0.0, 0.1, 0.0],
                                                   [0.2, 0.1, 0.7, 0.0]]),
                    np.array(["cat", "apple", "ball", "newterm"]))
    labels = np.array([0, 0, 1, 1, 2])
    alignment = align_labels(ids(5, "new"), labels, ids(4), np.array([0, 1, 2, 2]), new, old)
    assert alignment.method == "centroids" and alignment.n_shared == 0
    assert alignment.mapping == {0: 0, 1: 2, 2: 1}  # apple → 0, cat → 2, ball → 1
    np.testing.assert_array_equal(alignment.labels, [0, 0, 2, 2, 1])
    assert alignment.moved.empty
    assert alignment.changes["similarity"].notna().all()
    assert alignment.changes["overlap"].isna().all()
    assert (alignment.changes["similarity"] > 0.9).all()
    assert "no shared documents: matched on the clusters' term centroids" in alignment.summary


def test_centroids_with_no_common_vocabulary_match_nothing():
    old = Centroids(np.array([0, 1]), np.eye(2), np.array(["a", "b"]))
    new = Centroids(np.array([0, 1]), np.eye(2), np.array(["c", "d"]))
    alignment = align_labels(ids(2, "n"), [0, 1], ids(2), [0, 1], new, old)
    assert sorted(alignment.changes["status"]) == ["born", "born", "gone", "gone"]
    np.testing.assert_array_equal(alignment.labels, [2, 3])


def test_without_shared_documents_nor_centroids_the_error_says_what_to_do():
    with pytest.raises(InvalidInputError, match="share no document id.*cluster_centroids.npz"):
        align_labels(ids(3, "n"), [0, 1, 1], ids(3), [0, 0, 1])


def test_bad_input_is_refused():
    with pytest.raises(InvalidInputError, match="3 ids but 2 labels"):
        align_labels(ids(3), [0, 1], ids(3), [0, 1, 1])
    with pytest.raises(InvalidInputError, match="not unique"):
        align_labels(np.array(["a", "a"]), [0, 1], ids(2), [0, 1])
    with pytest.raises(InvalidInputError, match="non-negative integers"):
        align_labels(ids(2), [0.5, 1], ids(2), [0, 1])
    with pytest.raises(InvalidInputError, match="clusters × terms"):
        Centroids(np.array([0, 1]), np.eye(3), np.array(["a", "b", "c"]))


# -- reading a previous output folder --------------------------------------------------------


def write_previous(folder, clusters, centroids=None):
    folder.mkdir(parents=True, exist_ok=True)
    frame = pd.DataFrame({"doc_id": ids(len(clusters)), "cluster": clusters, "label": "",
                          "score": 1.0})
    frame.to_csv(folder / "clusters.csv", index=False)
    if centroids is not None:
        np.savez(folder / CENTROIDS_FILE, clusters=centroids.clusters, rows=centroids.rows,
                 terms=centroids.terms)
    return folder


def test_read_previous_reads_clusters_and_centroids(tmp_path):
    centroids = Centroids(np.array([0, 1]), np.eye(2), np.array(["a", "b"]))
    before = read_previous(write_previous(tmp_path / "run", [1, 0, 1], centroids))
    np.testing.assert_array_equal(before.labels, [1, 0, 1])
    np.testing.assert_array_equal(before.ids, ids(3))
    np.testing.assert_array_equal(before.centroids.terms, ["a", "b"])
    assert read_previous(write_previous(tmp_path / "bare", [0])).centroids is None
    alignment = align_to_previous(tmp_path / "run", ids(3), [0, 1, 0])
    np.testing.assert_array_equal(alignment.labels, [1, 0, 1])
    assert alignment.summary.startswith(f"aligned to {tmp_path / 'run'}: 2 clusters kept")


@pytest.mark.parametrize("files, message", [
    (None, "no such folder"),
    ({}, "not a textcluster output folder: it has no clusters.csv"),
    ({"clusters.csv": "id,group\na,1\n"}, "no column 'doc_id'.*doc_id,cluster,label,score"),
    ({"clusters.csv": "doc_id,cluster\na,1\nb,x\n"}, "row 3: cluster 'x' is not a cluster id"),
    ({"clusters.csv": "doc_id,cluster\na,1\nb,-1\n"}, "row 3: cluster '-1' is not"),
    ({"clusters.csv": "doc_id,cluster\na,1\na,0\n"}, "doc_id 'a' appears 2 times"),
    ({"clusters.csv": "doc_id,cluster\na,1\n", CENTROIDS_FILE: "junk"},
     "not a readable cluster centroid file"),
])
def test_read_previous_says_what_is_wrong(tmp_path, files, message):
    folder = tmp_path / "run"
    if files is not None:
        folder.mkdir()
        for name, text in files.items():
            (folder / name).write_text(text)
    with pytest.raises(InvalidInputError, match=message) as error:
        read_previous(folder)
    assert str(folder) in str(error.value)


def test_centroids_saved_with_pickled_objects_are_refused(tmp_path):
    folder = write_previous(tmp_path, [0, 1])
    np.savez(folder / CENTROIDS_FILE, clusters=np.array([0, 1]), rows=np.eye(2),
             terms=np.array(["a", None], dtype=object))
    with pytest.raises(InvalidInputError, match="not a readable cluster centroid file"):
        read_previous(folder)


# -- the command line ------------------------------------------------------------------------


def invoke(*args):
    result = CliRunner().invoke(main, ["run", *map(str, args)])
    assert "Traceback" not in result.output
    return result


def run_ok(*args):
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    return result


def clusters(folder):
    frame = pd.read_csv(folder / "clusters.csv", dtype={"doc_id": str})
    return dict(zip(frame["doc_id"], frame["cluster"]))


def test_cli_refit_with_new_documents_keeps_the_ids(tmp_path):
    corpus = write_folder_corpus(tmp_path / "corpus", n_per_class=15)
    first, second = tmp_path / "first", tmp_path / "second"
    run_ok(corpus, "--model", "nmf", "--out", first, *FAST)
    saved = np.load(first / CENTROIDS_FILE, allow_pickle=False)
    assert saved["rows"].shape == (3, len(saved["terms"])) and list(saved["clusters"]) == [0, 1, 2]
    # Renumber the first run's clusters, so that keeping them takes an alignment.
    before = pd.read_csv(first / "clusters.csv")
    before["cluster"] = before["cluster"].map({0: 2, 1: 0, 2: 1})
    before.to_csv(first / "clusters.csv", index=False)
    extra = write_folder_corpus(tmp_path / "extra", n_per_class=2, seed=9)
    for path in extra.rglob("*.txt"):
        shutil.copy(path, corpus / path.parent.name / f"new_{path.name}")
    result = run_ok(corpus, "--model", "nmf", "--seed", 1, "--out", second, "--align-to", first,
                    *FAST)
    assert (f"aligned to {first}: 3 clusters kept, 0 born, 0 gone; 100.0 % of the 45 shared "
            f"documents kept their cluster") in result.output
    old, new = clusters(first), clusters(second)
    assert len(new) == 51 and all(new[doc] == cluster for doc, cluster in old.items())
    changes = pd.read_csv(second / "changes.csv")
    assert list(changes.columns) == [
        "old_id", "new_id", "size_before", "size_after", "overlap", "similarity", "status",
        "fit_id"]
    assert changes["status"].tolist() == ["kept"] * 3
    assert (changes["old_id"] == changes["new_id"]).all()
    assert changes["size_before"].tolist() == [15] * 3 and changes["size_after"].tolist() == [17] * 3
    assert changes["overlap"].tolist() == [15] * 3
    assert pd.read_csv(second / "moved.csv").empty
    # cluster_terms.csv and the centroids are written in the aligned numbering too.
    terms = pd.read_csv(second / "cluster_terms.csv")
    by_doc = pd.read_csv(second / "clusters.csv").groupby("cluster")["label"].first()
    for cluster, label in by_doc.items():
        top = set(terms[terms["cluster"] == cluster]["term"])
        assert top and top <= set(VOCABULARIES[label].split()), (cluster, label, top)


def test_cli_without_shared_documents_aligns_on_centroids(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    run_ok(write_folder_corpus(tmp_path / "a", n_per_class=12), "--model", "nmf", "--out",
           first, *FAST)
    other = write_folder_corpus(tmp_path / "b", n_per_class=12, seed=3)
    for path in list(other.rglob("*.txt")):
        path.rename(path.with_name(f"other_{path.name}"))
    result = run_ok(other, "--model", "nmf", "--seed", 2, "--out", second, "--align-to", first,
                    *FAST)
    assert "3 clusters kept, 0 born, 0 gone (no shared documents" in result.output
    old = pd.read_csv(first / "clusters.csv").groupby("label")["cluster"].first()
    new = pd.read_csv(second / "clusters.csv").groupby("label")["cluster"].first()
    assert old.to_dict() == new.to_dict()
    assert (pd.read_csv(second / "changes.csv")["similarity"] > 0.5).all()


def test_cli_align_to_a_folder_that_is_no_output_fails_before_the_fit(tmp_path):
    corpus = write_folder_corpus(tmp_path / "corpus", n_per_class=5)
    (tmp_path / "empty").mkdir()
    result = invoke(corpus, "--model", "nmf", "--align-to", tmp_path / "empty", *FAST)
    assert result.exit_code == 2
    assert "not a textcluster output folder" in result.output
    assert "corpus" not in result.output.split("Error")[0]  # nothing printed before the error


def test_cli_assign_aligns_to_an_earlier_output(tmp_path):
    """``assign --align-to``: documents placed by a saved model keep the ids of an earlier
    output, here a run whose clusters were renumbered after the model was saved."""
    corpus = write_folder_corpus(tmp_path / "corpus", n_per_class=10)
    first, model = tmp_path / "first", tmp_path / "model"
    run_ok(corpus, "--model", "nmf", "--out", first, "--save-model", model, *FAST)
    before = pd.read_csv(first / "clusters.csv")
    before["cluster"] = before["cluster"].map({0: 2, 1: 0, 2: 1})
    before.to_csv(first / "clusters.csv", index=False)
    out = tmp_path / "assigned"
    result = CliRunner().invoke(main, ["assign", str(model), str(corpus), "--out", str(out),
                                       "--align-to", str(first)])
    assert result.exit_code == 0, result.output
    assert "3 clusters kept, 0 born, 0 gone; 100.0 % of the 30 shared documents" in result.output
    assert clusters(out) == clusters(first)
    assert (out / "changes.csv").is_file() and pd.read_csv(out / "moved.csv").empty
