"""The label-free choice of the graph strength (textcluster.models.selection) and the
per-document confidence score."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment
from sklearn.preprocessing import normalize

from textcluster import graph as graphs
from textcluster.assign import cluster_scores
from textcluster.metrics import contingency, nmi
from textcluster.models import GNMF, LSIKMeans
from textcluster.models._base import Beside, InThisThread
from textcluster.models import selection
from textcluster.models.selection import (
    LAM_PATH,
    MIN_STABILITY,
    Candidate,
    choose,
    cohesion,
    graph_cut,
    held_out_graph,
)

from ._planted import following_graph, linking_graph, planted_corpus

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def test_cohesion_is_the_mean_cosine_to_the_cluster_direction():
    rng = np.random.default_rng(0)
    X = normalize(rng.random((30, 8)))
    labels = rng.integers(0, 3, 30)
    expected = np.mean([X[i] @ normalize(X[labels == labels[i]].sum(0, keepdims=True))[0]
                        for i in range(30)])
    assert cohesion(sp.csr_matrix(X), labels) == pytest.approx(expected)
    assert cohesion(X, labels) == pytest.approx(expected)


def test_cohesion_prefers_the_planted_partition():
    X, y = planted_corpus(seed=1)
    shuffled = np.random.default_rng(0).permutation(y)
    assert cohesion(X, y) > cohesion(X, shuffled) + 0.1


def test_graph_cut_of_components_is_zero_and_of_a_split_edge_is_counted():
    W = sp.csr_matrix(np.array([[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0.0]]))
    assert graph_cut(W, np.array([0, 0, 1, 1])) == 0.0
    # clusters {0, 2} and {1, 3}: every edge leaves its cluster
    assert graph_cut(W, np.array([0, 1, 0, 1])) == 1.0
    path = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0.0]]))
    # {0, 1} has volume 3 with 1 cut edge, {2} volume 1 with 1 cut edge
    assert graph_cut(path, np.array([0, 0, 1])) == pytest.approx((1 / 3 + 1) / 2)


def test_held_out_graph_has_the_next_neighbours_and_none_of_the_graphs_edges():
    X, _ = planted_corpus(n_per_class=40, seed=3)
    W = graphs.knn_graph(X, n_neighbors=5)
    held_out = held_out_graph(normalize(X), W)
    assert held_out.multiply(W).nnz == 0
    ranks = selection.HELD_OUT_RANKS * int(np.median(np.diff(W.indptr)))
    near = graphs.knn_graph(X, n_neighbors=ranks, symmetrize="none")
    union = (held_out + W.multiply(near != 0)) != 0
    assert (union != (near != 0)).nnz == 0  # the nearest, split between the two graphs
    assert set(np.unique(held_out.data)) == {1.0}
    X = X.tolil()
    X[0] = 0  # an empty document has no neighbours to hold out
    assert held_out_graph(normalize(X.tocsr()), W)[0].nnz == 0


def test_held_out_graph_samples_the_documents_of_a_large_corpus(monkeypatch):
    X, _ = planted_corpus(n_per_class=40, seed=3)
    W = graphs.knn_graph(X, n_neighbors=5)
    monkeypatch.setattr(selection, "HELD_OUT_SAMPLE", 30)
    held_out = held_out_graph(normalize(X), W, random_state=0)
    assert np.count_nonzero(np.diff(held_out.indptr)) == 30
    assert (held_out != held_out_graph(normalize(X), W, random_state=0)).nnz == 0


def candidates(*scores):
    return [Candidate({"lam": i}, cohesion=c, graph_cut=0.0, held_out_cut=g)
            for i, (c, g) in enumerate(scores)]


def test_choose_takes_the_fewest_cut_held_out_edges_among_equally_coherent_clusterings():
    path = candidates((0.300, 0.20), (0.299, 0.15), (0.2975, 0.10), (0.290, 0.05))
    assert choose(path) == 2  # 0.290 is more than 1 % below 0.300: not admissible
    assert [c.admissible for c in path] == [True, True, True, False]
    assert [c.chosen for c in path] == [False, False, True, False]
    # the model's own graph does not decide: the graph term lowers its cut by fitting it
    path = [Candidate({"lam": 0}, 0.300, graph_cut=0.3, held_out_cut=0.10),
            Candidate({"lam": 1}, 0.299, graph_cut=0.1, held_out_cut=0.12)]
    assert choose(path) == 0


def test_coherence_is_measured_from_the_model_without_the_graph():
    # the start (LSA + k-means) is more coherent than the model's own fit at λ = 0; what the
    # graph may cost is measured from that fit: λ = 1 is within 1 % of it, not of the start
    path = candidates((0.300, 0.20), (0.2975, 0.18), (0.2950, 0.10), (0.290, 0.05))
    assert choose(path) == 2
    assert [c.admissible for c in path] == [True, True, True, False]
    # a start less coherent than 1 % below the fit at λ = 0 is not admissible either
    path = candidates((0.290, 0.05), (0.300, 0.20), (0.299, 0.15))
    assert choose(path) == 2 and not path[0].admissible
    # a fit at λ = 0 more than 1 % less coherent than the start: the model is weaker than the
    # documents' geometry, and coherence is measured from the start
    path = candidates((0.300, 0.20), (0.290, 0.18), (0.288, 0.10))
    assert choose(path) == 0 and [c.admissible for c in path] == [True, False, False]


def test_the_path_ends_at_two_inadmissible_candidates_in_a_row():
    # the start, the fit at λ = 0, then the path: it ends at the second λ in a row more than
    # 1 % less coherent than the reference of the candidates so far; one alone does not
    path = candidates((0.300, 0.2), (0.300, 0.2), (0.299, 0.1), (0.296, 0.05), (0.2995, 0.0),
                      (0.296, 0.1), (0.295, 0.1), (0.299, 0.0))
    assert selection.path_end(path) == 6
    assert selection.path_end(path[:6]) is None
    assert selection.path_end(path, run_length=None) is None  # the whole path
    # the start and the fit at λ = 0 do not count, whatever their cohesion
    assert selection.path_end(candidates((0.300, 0.2), (0.280, 0.2), (0.279, 0.1))) is None


@pytest.mark.parametrize("seed", [0, 1])
def test_a_path_ended_beside_its_scores_is_the_path_ended_in_turn(monkeypatch, seed):
    # a graph that links the classes: the path ends before its largest λ; scored beside it
    # (where the path may run one λ further before the score is known), the same candidates,
    # choice, clusters and count of updates as scored in turn
    X, y = planted_corpus(n_per_class=50, noise=0.3, seed=seed)
    G = linking_graph(y)
    beside = GNMF(3, graph_check=False, random_state=seed, **FAST).fit(X, graph=G)
    path = [c for c in beside.lam_selection_["candidates"] if c["start"] == "lsa-kmeans"]
    assert path[-1]["lam"] < LAM_PATH[-1]
    assert not path[-1]["admissible"] and not path[-2]["admissible"]
    monkeypatch.setattr(selection.SelectsGraphStrength, "_beside",
                        lambda self: InThisThread())
    in_turn = GNMF(3, graph_check=False, random_state=seed, **FAST).fit(X, graph=G)
    assert beside.lam_selection_ == in_turn.lam_selection_
    assert beside.n_iter_ == in_turn.n_iter_
    assert np.array_equal(beside.labels_, in_turn.labels_)


def test_graph_led_candidate_needs_reproducible_clusters_and_fewer_cut_edges():
    def pick(stability, cut, coherence=0.29):
        path = candidates((0.3, 0.2), (0.299, 0.1))
        graph_led = Candidate({"lam": "graph"}, cohesion=coherence, graph_cut=0.0,
                              held_out_cut=cut)
        return choose(path, graph_led, stability)

    assert pick(MIN_STABILITY, 0.05) == 2
    assert pick(MIN_STABILITY - 0.01, 0.05) == 1  # not reproducible
    assert pick(0.99, 0.15) == 1  # cuts more edges than the geometry-led choice
    assert pick(0.99, 0.05, coherence=0.28) == 1  # more than 5 % less coherent


FAST = {"max_iter": 60, "n_init": 3, "init_iter": 10, "n_assign_init": 5}


@pytest.mark.parametrize("seed", [0, 1])
def test_a_graph_that_links_the_classes_is_kept_weak(seed):
    X, y = planted_corpus(n_per_class=50, noise=0.3, seed=seed)
    G = linking_graph(y)
    with pytest.warns(UserWarning, match="does not agree"):  # the graph check rejects it ...
        checked = GNMF(3, random_state=seed, **FAST).fit(X, graph=G)
    assert checked.lam_ == 0.0
    # ... and without the check the rule keeps it weak: the strong settings and the graph-led
    # clusters change the clusters at a cost in coherence, and are not admitted
    model = GNMF(3, graph_check=False, random_state=seed, **FAST).fit(X, graph=G)
    candidates = model.lam_selection_["candidates"]
    assert model.lam_ <= 3.0 and model.lam_selection_["chosen"]["start"] == "lsa-kmeans"
    assert not any(c["admissible"] for c in candidates if c["lam"] >= 30)
    without_graph = candidates[1]["cohesion"]  # the fit at λ = 0 from the start
    assert cohesion(X, model.labels_) >= 0.99 * without_graph
    strong = GNMF(3, lam=1e3, graph_check=False, random_state=seed, **FAST).fit(X, graph=G)
    assert nmi(y, model.labels_) > nmi(y, strong.labels_) + 0.1


@pytest.mark.parametrize("seed", [0, 1])
def test_a_graph_that_follows_the_classes_is_used(seed):
    X, y = planted_corpus(n_per_class=50, noise=0.6, seed=seed)
    without = GNMF(3, lam=0.0, random_state=seed, **FAST).fit(X)
    model = GNMF(3, graph_check=False, random_state=seed, **FAST).fit(
        X, graph=following_graph(X, y))
    assert model.lam_ > 0
    assert nmi(y, model.labels_) >= max(nmi(y, without.labels_), 0.9)


def test_graph_led_starts_stop_once_they_cannot_agree(monkeypatch):
    X, y = planted_corpus(n_per_class=50, noise=0.6, seed=2)
    fits = {}
    for agreement in (0.6, 0.75):  # two starts at 0.6: the mean cannot reach 0.9 any more
        monkeypatch.setattr(selection, "nmi", lambda a, b, value=agreement: value)
        fits[agreement] = GNMF(3, graph_check=False, random_state=0, **FAST).fit(X)
    short, full = fits[0.6], fits[0.75]
    led = short.lam_selection_["candidates"][-1]
    assert led["starts"] == 2 and led["stability"] == 0.6 and not led["admissible"]
    assert full.lam_selection_["candidates"][-1]["starts"] == 3
    assert full.n_iter_ - short.n_iter_ == FAST["max_iter"]
    # the candidate could not be chosen either way: the same clusters
    assert short.lam_ == full.lam_ and np.array_equal(short.labels_, full.labels_)


def test_graph_led_starts_stop_after_an_incoherent_one(monkeypatch):
    X, y = planted_corpus(n_per_class=50, noise=0.6, seed=2)
    monkeypatch.setattr(selection, "nmi", lambda a, b: 1.0)  # starts that always agree
    fits = {}
    for tolerance in (1.0, -1.0):  # every start coherent; none (above the start's cohesion)
        monkeypatch.setattr(selection, "GRAPH_LED_TOLERANCE", tolerance)
        fits[tolerance] = GNMF(3, graph_check=False, random_state=0, **FAST).fit(X)
    full, short = fits[1.0], fits[-1.0]
    assert full.lam_selection_["candidates"][-1]["starts"] == 3
    led = short.lam_selection_["candidates"][-1]
    assert led["starts"] == 1 and led["stability"] is None and not led["admissible"]
    assert full.n_iter_ - short.n_iter_ == 2 * FAST["max_iter"]


def test_the_start_is_the_first_candidate_and_is_returned_as_it_is(monkeypatch):
    X, y = planted_corpus(n_per_class=50, noise=0.6, seed=2)
    model = GNMF(3, graph_check=False, random_state=0, **FAST).fit(X)
    candidates = model.lam_selection_["candidates"]
    assert len(candidates) == len(LAM_PATH) + 2  # the start, the whole path, the graph-led fit
    assert {k: candidates[0][k] for k in ("lam", "iterations", "start")} == {
        "lam": 0.0, "iterations": 0, "start": "lsa-kmeans"}
    assert [c["iterations"] for c in candidates[1:3]] == [50, 20]
    # its own kNN graph: judged on the next neighbours; a caller's graph: on its own edges
    assert any(c["held_out_cut"] != c["graph_cut"] for c in candidates)
    given = GNMF(3, graph_check=False, random_state=0, **FAST).fit(X, graph=model.graph_)
    assert all(c["held_out_cut"] == c["graph_cut"]
               for c in given.lam_selection_["candidates"])
    # chosen, the start is the clusters of LSA + k-means, with no iteration made
    monkeypatch.setattr(selection, "choose", lambda *args, **kw: 0)
    start = GNMF(3, graph_check=False, random_state=0, **FAST).fit(X)
    assert start.lam_ == 0.0 and len(start.objective_history_) == 1
    assert 0 < start.n_iter_ <= start.planned_iterations()  # the candidates' updates
    lsa = LSIKMeans(3, random_state=0).fit(X).labels_
    assert nmi(lsa, start.labels_) > 0.9


def test_candidates_scored_beside_the_path_are_those_scored_in_turn(monkeypatch):
    # the candidates are scored in a second thread while the path goes on: the same scores,
    # choice and clusters as scoring each in turn; a RandomState instance (whose draws would
    # follow the threads' timing) is scored in turn, so two fits from equal instances agree
    X, y = planted_corpus(n_per_class=50, noise=0.6, seed=2)
    beside = GNMF(3, graph_check=False, random_state=0, **FAST).fit(X)
    assert isinstance(beside._beside(), Beside)
    monkeypatch.setattr(selection.SelectsGraphStrength, "_beside",
                        lambda self: InThisThread())
    in_turn = GNMF(3, graph_check=False, random_state=0, **FAST).fit(X)
    assert beside.lam_selection_ == in_turn.lam_selection_
    assert np.array_equal(beside.labels_, in_turn.labels_)
    monkeypatch.undo()
    fits = [GNMF(3, graph_check=False, random_state=np.random.RandomState(1), **FAST).fit(X)
            for _ in range(2)]
    assert isinstance(fits[0]._beside(), InThisThread)
    assert fits[0].lam_selection_ == fits[1].lam_selection_


def test_a_failed_fit_stops_the_graph_led_fits_beside_it(monkeypatch):
    # the path fails at its first update: the graph-led fits running beside it stop at their
    # next update (a Ctrl-C does not wait for them), and no thread is left behind
    import threading

    X, y = planted_corpus(n_per_class=50, noise=0.6, seed=2)
    beside, update = [], GNMF._update

    def failing(self, factors, ctx):
        if threading.current_thread() is threading.main_thread():
            raise FloatingPointError("the path failed")
        beside.append(1)
        return update(self, factors, ctx)

    monkeypatch.setattr(GNMF, "_update", failing)
    model = GNMF(3, graph_check=False, random_state=0, **{**FAST, "max_iter": 100_000})
    with pytest.raises(FloatingPointError, match="the path failed"):
        model.fit(X)
    assert len(beside) < 100_000  # not one start's 100,000 updates, let alone three
    assert not any(t.name.startswith("textcluster-beside") for t in threading.enumerate())


def correctly_assigned(y, labels):
    """Documents whose cluster is matched to their class by the best one-to-one map."""
    C = contingency(y, labels)
    clusters, classes = np.unique(labels), np.unique(y)
    rows, cols = linear_sum_assignment(C, maximize=True)
    mapping = {clusters[r]: classes[c] for r, c in zip(rows, cols)}
    return np.array([mapping.get(cluster) == label for cluster, label in zip(labels, y)])


def test_correct_documents_score_higher_than_misassigned_ones_on_planted_data():
    X, y = planted_corpus(n_per_class=60, noise=0.5, seed=3)
    model = GNMF(3, lam=0.0, random_state=0, **FAST)
    V = model.fit_transform(X)
    correct = correctly_assigned(y, model.labels_)
    assert 0 < (~correct).sum() and correct.sum() > len(y) / 2
    scores = cluster_scores(normalize(V), model.labels_)
    assert scores[correct].mean() > scores[~correct].mean()
