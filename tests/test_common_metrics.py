"""Properties every clustering metric must have, plus hand-computed values."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score, rand_score

from textcluster._errors import InvalidInputError
from textcluster.metrics import (
    METRICS,
    accuracy,
    adjusted_rand,
    contingency,
    entropy,
    evaluate,
    nmi,
    purity,
    rand_index,
)
from textcluster.registry import UnknownNameError

NAMES = ["purity", "entropy", "nmi", "accuracy", "rand_index", "ari"]
AVERAGE_METHODS = ["max", "arithmetic", "geometric", "min"]


@st.composite
def labelings(draw, max_classes=6, max_clusters=7, max_n=60):
    """(labels_true, labels_pred) of equal length n >= 1."""
    n = draw(st.integers(1, max_n))
    true = draw(st.lists(st.integers(0, max_classes - 1), min_size=n, max_size=n))
    pred = draw(st.lists(st.integers(0, max_clusters - 1), min_size=n, max_size=n))
    return true, pred


def relabel(labels, data, prefix=""):
    """The same partition under new, randomly permuted label names."""
    values = sorted(set(labels))
    names = data.draw(st.permutations(range(len(values))))
    mapping = {v: f"{prefix}{name}" if prefix else name + 100 for v, name in zip(values, names)}
    return [mapping[v] for v in labels]


def score_all(true, pred):
    return {name: METRICS.get(name).func(true, pred) for name in NAMES}


# -- properties ----------------------------------------------------------------------------------


@given(labelings())
def test_bounds(pair):
    true, pred = pair
    assert 0 < purity(true, pred) <= 1
    assert 0 < accuracy(true, pred) <= 1
    assert accuracy(true, pred) <= purity(true, pred) + 1e-12  # one-to-one is a restriction
    assert -1e-12 <= entropy(true, pred) <= 1 + 1e-12
    for method in AVERAGE_METHODS:
        assert -1e-12 <= nmi(true, pred, average_method=method) <= 1 + 1e-12
    assert -0.5 - 1e-12 <= adjusted_rand(true, pred) <= 1 + 1e-12
    assert 0 <= rand_index(true, pred) <= 1


@settings(max_examples=60)
@given(labelings(), st.data())
def test_invariant_to_relabelling_clusters_and_classes(pair, data):
    true, pred = pair
    expected = score_all(true, pred)
    renamed_clusters = score_all(true, relabel(pred, data))
    renamed_classes = score_all(relabel(true, data, prefix="class-"), pred)
    for name in NAMES:
        assert renamed_clusters[name] == pytest.approx(expected[name], abs=1e-12), name
        assert renamed_classes[name] == pytest.approx(expected[name], abs=1e-12), name


@settings(max_examples=60)
@given(labelings(), st.data())
def test_perfect_clustering_scores_best(pair, data):
    true, _ = pair
    pred = relabel(true, data, prefix="cluster-")
    scores = evaluate(true, pred)
    assert scores["purity"] == pytest.approx(1.0)
    assert scores["accuracy"] == pytest.approx(1.0)
    assert scores["nmi"] == pytest.approx(1.0)
    assert scores["entropy"] == pytest.approx(0.0, abs=1e-12)
    assert scores["ari"] == pytest.approx(1.0)
    assert scores["rand_index"] == pytest.approx(1.0)


@given(labelings())
def test_nmi_and_ari_agree_with_sklearn(pair):
    true, pred = pair
    for method in AVERAGE_METHODS:
        expected = normalized_mutual_info_score(true, pred, average_method=method)
        assert nmi(true, pred, average_method=method) == pytest.approx(expected, abs=1e-12)
    assert nmi(true, pred) == pytest.approx(
        normalized_mutual_info_score(true, pred, average_method="max"), abs=1e-12
    )
    assert adjusted_rand(true, pred) == pytest.approx(adjusted_rand_score(true, pred), abs=1e-12)
    assert rand_index(true, pred) == pytest.approx(rand_score(true, pred), abs=1e-12)


def brute_force_accuracy(true, pred):
    """Best one-to-one cluster -> class matching by trying every permutation of a padded table."""
    C = contingency(true, pred)
    size = max(C.shape)
    padded = np.zeros((size, size), dtype=int)
    padded[: C.shape[0], : C.shape[1]] = C
    permutations = itertools.permutations(range(size))
    best = max(sum(padded[i, p[i]] for i in range(size)) for p in permutations)
    return best / len(true)


@given(labelings(max_classes=4, max_clusters=5, max_n=30))
def test_accuracy_equals_brute_force(pair):
    true, pred = pair
    assert accuracy(true, pred) == pytest.approx(brute_force_accuracy(true, pred))


@given(labelings())
def test_evaluate_matches_the_single_metrics(pair):
    true, pred = pair
    scores = evaluate(true, pred)
    assert list(scores) == NAMES
    for name, value in score_all(true, pred).items():
        assert scores[name] == pytest.approx(value, abs=1e-12)


# -- hand-computed values ------------------------------------------------------------------------


def test_hand_computed_three_classes():
    true = ["a", "a", "a", "b", "b", "c"]
    pred = [0, 0, 1, 1, 1, 1]
    # Contingency (clusters x classes a, b, c): cluster 0 = [2, 0, 0], cluster 1 = [1, 2, 1].
    np.testing.assert_array_equal(contingency(true, pred), [[2, 0, 0], [1, 2, 1]])
    # purity = (max(2,0,0) + max(1,2,1)) / 6 = (2 + 2) / 6 = 2/3
    assert purity(true, pred) == pytest.approx(2 / 3)
    # entropy, n = 6, q = 3: cluster 0 contributes 2 log2(2/2) = 0;
    # cluster 1 (n_1 = 4): 1 log2(1/4) + 2 log2(2/4) + 1 log2(1/4) = -2 - 2 - 2 = -6;
    # E = 6 / (6 log2 3) = 1 / log2 3 = 0.6309...
    assert entropy(true, pred) == pytest.approx(1 / math.log2(3))
    # accuracy: best map 0 -> a (2 right), 1 -> b (2 right): 4/6
    assert accuracy(true, pred) == pytest.approx(4 / 6)


def test_hand_computed_hungarian_beats_greedy():
    true = ["x", "x", "x", "y", "y", "x", "x"]
    pred = [0, 0, 0, 0, 0, 1, 1]
    # Contingency (clusters x classes x, y): cluster 0 = [3, 2], cluster 1 = [2, 0]; n = 7.
    np.testing.assert_array_equal(contingency(true, pred), [[3, 2], [2, 0]])
    # purity = (3 + 2) / 7
    assert purity(true, pred) == pytest.approx(5 / 7)
    # accuracy: greedy takes 0 -> x (3) and then 1 -> y (0) = 3/7; the best one-to-one map is
    # 0 -> y (2) and 1 -> x (2) = 4/7.
    assert accuracy(true, pred) == pytest.approx(4 / 7)
    # entropy, q = 2 (log2 q = 1): cluster 0 (n_0 = 5): 3 log2(3/5) + 2 log2(2/5);
    # cluster 1: 2 log2(2/2) = 0; E = (3 log2(5/3) + 2 log2(5/2)) / 7 = 0.69354...
    assert entropy(true, pred) == pytest.approx((3 * math.log2(5 / 3) + 2 * math.log2(5 / 2)) / 7)


def test_hand_computed_more_clusters_than_classes():
    true = ["x", "x", "x", "y", "y", "y"]
    pred = [0, 0, 1, 1, 2, 2]
    # Contingency: cluster 0 = [2, 0], cluster 1 = [1, 1], cluster 2 = [0, 2].
    # purity = (2 + 1 + 2) / 6 = 5/6
    assert purity(true, pred) == pytest.approx(5 / 6)
    # accuracy: two classes, so one cluster stays unmatched: 0 -> x, 2 -> y gives (2 + 2) / 6
    assert accuracy(true, pred) == pytest.approx(4 / 6)
    # entropy: only cluster 1 is mixed: 1 log2(1/2) + 1 log2(1/2) = -2; E = 2 / (6 log2 2) = 1/3
    assert entropy(true, pred) == pytest.approx(1 / 3)


def test_hand_computed_nmi_average_methods():
    true = [0, 0, 1, 1]
    pred = [0, 0, 1, 2]
    # H(C) = 1 bit, H(C') = -(1/2 log2 1/2 + 2 * 1/4 log2 1/4) = 1.5 bits; each cluster is pure,
    # so H(C | C') = 0 and MI = H(C) = 1 bit. The normalizers are max 1.5, arithmetic 1.25,
    # geometric sqrt(1.5), min 1.
    assert nmi(true, pred) == pytest.approx(1 / 1.5)
    assert nmi(true, pred, average_method="arithmetic") == pytest.approx(1 / 1.25)
    assert nmi(true, pred, average_method="geometric") == pytest.approx(1 / math.sqrt(1.5))
    assert nmi(true, pred, average_method="min") == pytest.approx(1.0)


def test_hand_computed_rand_index():
    true = [0, 0, 1, 1]
    pred = [0, 0, 0, 1]
    # 6 pairs: (1,2) together in both, (1,4) and (2,4) apart in both: 3 agree; (1,3), (2,3) are
    # together in the clustering only and (3,4) in the classes only: 3 disagree. RI = 3/6.
    assert rand_index(true, pred) == pytest.approx(0.5)


def test_rand_index_is_high_for_many_small_clusters():
    # 10 classes of 10; 10 clusters that ignore the classes (cluster = position in the class):
    # accuracy and ARI see no agreement, the Rand index still credits the pairs kept apart.
    true = np.repeat(np.arange(10), 10)
    pred = np.tile(np.arange(10), 10)
    assert accuracy(true, pred) == pytest.approx(0.1)
    assert adjusted_rand(true, pred) < 0
    assert rand_index(true, pred) == pytest.approx(1 - 2 * 450 / 4950)


def test_entropy_is_zero_with_one_class():
    assert entropy(["a", "a", "a"], [0, 1, 2]) == 0.0


def test_single_cluster_carries_no_information():
    assert nmi([0, 0, 1, 1], [5, 5, 5, 5]) == 0.0
    assert purity([0, 0, 0, 1], [5, 5, 5, 5]) == pytest.approx(3 / 4)


# -- label types and input checking --------------------------------------------------------------


def test_labels_of_any_hashable_type():
    true = [("a", 1), ("a", 1), "b", 3]
    pred = np.array(["p", "p", "q", "r"])
    assert evaluate(true, pred)["purity"] == 1.0
    assert evaluate(np.array([1.5, 1.5, 2.5]), [None, None, 0])["accuracy"] == 1.0


def test_contingency_orientation_is_clusters_by_classes():
    C = contingency(["a", "b", "b", "b"], [0, 0, 0, 1])
    assert C.shape == (2, 2)  # 2 clusters x 2 classes
    np.testing.assert_array_equal(C, [[1, 2], [0, 1]])


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "true, pred, match",
    [
        ([0, 1, 1], [0, 1], "3 labels but labels_pred has 2"),
        ([], [], "empty"),
        (np.zeros((3, 2)), [0, 1, 2], "1-D"),
        ([0, 1], np.zeros((2, 1)), "1-D"),
        ("abc", "abc", "1-D"),
        ([[0], [1]], [0, 1], "hashable"),
        (7, 7, "1-D"),
    ],
)
def test_bad_input_raises(name, true, pred, match):
    with pytest.raises(InvalidInputError, match=match):
        METRICS.get(name).func(true, pred)


def test_bad_input_raises_in_evaluate_and_contingency():
    with pytest.raises(InvalidInputError, match="labels_true has 1 labels"):
        evaluate([0], [0, 1])
    with pytest.raises(InvalidInputError, match="empty"):
        contingency([], [])


def test_unknown_nmi_average_method():
    with pytest.raises(InvalidInputError, match="average_method='mean'.*'max'"):
        nmi([0, 1], [0, 1], average_method="mean")


def test_registry_names_and_directions():
    assert METRICS.names() == sorted(NAMES)
    directions = {name: METRICS.get(name).greater_is_better for name in NAMES}
    assert directions == {
        "purity": True,
        "entropy": False,
        "nmi": True,
        "accuracy": True,
        "rand_index": True,
        "ari": True,
    }
    assert METRICS.get("nmi").name == "nmi"
    with pytest.raises(UnknownNameError, match="known metrics: accuracy, ari"):
        METRICS.get("f1")
