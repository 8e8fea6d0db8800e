"""The evaluation protocols: labelled subsets, class subsets, split metrics."""

import numpy as np
import pytest

from textcluster._errors import InvalidInputError
from textcluster.metrics import evaluate
from textcluster.pipeline.protocol import class_subset, evaluate_split, labeled_subset

LABELS = np.array(["b"] * 50 + ["a"] * 21 + ["c"] * 4 + ["d"] * 1)


def test_fraction_labels_that_share_of_each_class_with_sorted_codes():
    y = labeled_subset(LABELS, fraction=0.1, random_state=0)
    classes = np.unique(LABELS)
    labelled = y >= 0
    # each labelled document carries the code of its own class
    np.testing.assert_array_equal(classes[y[labelled]], LABELS[labelled])
    counts = {c: int(np.sum(LABELS[labelled] == c)) for c in classes}
    # round(0.1 · size), at least one: a 21 → 2, b 50 → 5, c 4 → 1 (0.4 rounds to 0), d 1 → 1
    assert counts == {"a": 2, "b": 5, "c": 1, "d": 1}


def test_half_rounds_up_and_fraction_one_labels_everything():
    labels = np.repeat([0, 1], [5, 15])
    y = labeled_subset(labels, fraction=0.5, random_state=1)
    assert np.sum(y == 0) == 3 and np.sum(y == 1) == 8  # 2.5 → 3, 7.5 → 8
    np.testing.assert_array_equal(labeled_subset(labels, fraction=1.0), labels)


def test_per_class_labels_exactly_that_many():
    y = labeled_subset(LABELS, per_class=1, random_state=3)
    assert np.bincount(y[y >= 0]).tolist() == [1, 1, 1, 1]


def test_the_draw_is_seeded():
    a = labeled_subset(LABELS, fraction=0.2, random_state=5)
    b = labeled_subset(LABELS, fraction=0.2, random_state=5)
    c = labeled_subset(LABELS, fraction=0.2, random_state=6)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


@pytest.mark.parametrize("fraction", [0, -0.1, 1.5, True, "0.1", float("nan")])
def test_fraction_outside_the_unit_interval_is_a_clear_error(fraction):
    with pytest.raises(InvalidInputError, match=r"fraction=.* must be a number in \(0, 1\]"):
        labeled_subset(LABELS, fraction=fraction)


def test_per_class_larger_than_a_class_names_the_class():
    with pytest.raises(InvalidInputError, match="class 'd' has only 1 document "):
        labeled_subset(LABELS, per_class=2)


@pytest.mark.parametrize("per_class", [0, -1, 1.5])
def test_per_class_must_be_a_positive_integer(per_class):
    with pytest.raises(InvalidInputError, match="positive integer"):
        labeled_subset(LABELS, per_class=per_class)


@pytest.mark.parametrize("kwargs", [{}, {"fraction": 0.1, "per_class": 1}])
def test_exactly_one_of_fraction_and_per_class(kwargs):
    with pytest.raises(InvalidInputError, match="exactly one"):
        labeled_subset(LABELS, **kwargs)


def test_unlabelled_corpus_is_a_clear_error():
    with pytest.raises(InvalidInputError, match="no class labels"):
        labeled_subset(None, fraction=0.1)
    with pytest.raises(InvalidInputError, match="no class labels"):
        class_subset(None, 2, 0)


def test_class_subset_keeps_all_documents_of_k_drawn_classes():
    for draw in range(5):
        index = class_subset(LABELS, 2, draw)
        chosen = np.random.default_rng(draw).choice(np.unique(LABELS), 2, replace=False)
        np.testing.assert_array_equal(index, np.flatnonzero(np.isin(LABELS, chosen)))
        assert len(np.unique(LABELS[index])) == 2
        np.testing.assert_array_equal(index, class_subset(LABELS, 2, draw))  # same draw


def test_class_subset_draws_differ_and_k_equal_to_all_keeps_everything():
    draws = {tuple(np.unique(LABELS[class_subset(LABELS, 2, d)])) for d in range(10)}
    assert len(draws) > 1
    np.testing.assert_array_equal(class_subset(LABELS, 4, 0), np.arange(LABELS.size))


@pytest.mark.parametrize("k", [0, 5, 2.0])
def test_impossible_k_is_a_clear_error(k):
    with pytest.raises(InvalidInputError, match="choose 1 <= k <= 4"):
        class_subset(LABELS, k, 0)


def test_negative_draw_is_a_clear_error():
    with pytest.raises(InvalidInputError, match="draw=-1"):
        class_subset(LABELS, 2, -1)


def test_evaluate_split_scores_all_and_unlabelled_documents_separately():
    truth = np.repeat([0, 1, 2], 10)
    pred = truth.copy()
    pred[[3, 13, 23]] = [1, 2, 0]  # three mistakes, all on unlabelled documents
    y = np.full(30, -1)
    y[[0, 10, 20]] = [0, 1, 2]
    scores = evaluate_split(truth, pred, y)
    assert scores["all"] == evaluate(truth, pred)
    unlabelled = y == -1
    assert scores["unlabelled"] == evaluate(truth[unlabelled], pred[unlabelled])
    assert scores["all"]["accuracy"] == pytest.approx(27 / 30)
    assert scores["unlabelled"]["accuracy"] == pytest.approx(24 / 27)


def test_evaluate_split_without_unlabelled_documents():
    truth = np.repeat([0, 1], 5)
    scores = evaluate_split(truth, truth, truth)
    assert scores["unlabelled"] is None and scores["all"]["nmi"] == 1.0


def test_evaluate_split_needs_one_entry_per_document():
    with pytest.raises(InvalidInputError, match="one entry per document"):
        evaluate_split([0, 1, 1], [0, 1, 1], [-1, -1])
