"""Small pipelines and corpora for the batch tests, written at test time."""

import signal
from contextlib import contextmanager

import numpy as np
import scipy.io
import scipy.sparse as sp

# Few iterations and restarts: every job takes milliseconds.
FAST_PARAMS = {
    "kmeans": "{ n_init = 2, max_iter = 50 }",
    "nmf": "{ n_init = 2, init_iter = 5, max_iter = 20, n_assign_init = 2 }",
    "gnmf": "{ n_init = 2, init_iter = 5, max_iter = 20, n_assign_init = 2 }",
}


def write_planted_mat(data_dir, n_classes=4, n_per_class=20, terms_per_class=15, seed=0):
    """``<data_dir>/tdt2/TDT2.mat``: Poisson term counts in which each class favours its own
    block of terms (Deng Cai's ``fea``/``gnd`` layout). Returns ``data_dir``."""
    rng = np.random.default_rng(seed)
    n, m = n_classes * n_per_class, n_classes * terms_per_class
    gnd = np.repeat(np.arange(1, n_classes + 1), n_per_class)
    rates = np.full((n, m), 0.5)
    for c in range(n_classes):
        rates[np.ix_(gnd == c + 1, np.arange(c * terms_per_class, (c + 1) * terms_per_class))] = 0.9
    counts = rng.poisson(rates).astype(float)
    counts[counts.sum(axis=1) == 0, 0] = 1.0
    folder = data_dir / "tdt2"
    folder.mkdir(parents=True, exist_ok=True)
    scipy.io.savemat(folder / "TDT2.mat", {"fea": sp.csr_matrix(counts), "gnd": gnd[:, None]})
    return data_dir


def pipeline_text(models=("kmeans", "nmf"), k="{ from = 2, to = 3 }", draws=2, extra="",
                  output=None, name="tiny", params=None):
    """A class-subset pipeline on the planted TDT2 matrix."""
    params = {**FAST_PARAMS, **(params or {})}
    blocks = [f'[pipeline]\nname = "{name}"\n', '[[corpora]]\nname = "tdt2"\n']
    blocks += [f'[[models]]\nname = "{m}"\nparams = {params.get(m, "{}")}\n' for m in models]
    blocks.append(f'[protocol]\nkind = "class-subset"\nk = {k}\ndraws = {draws}\n{extra}')
    if output is not None:
        blocks.append(f'[output]\ndir = "{output.as_posix()}"\n')
    return "\n".join(blocks)


def write_pipeline(path, **kwargs):
    path.write_text(pipeline_text(**kwargs), encoding="utf-8")
    return path


@contextmanager
def time_limit(seconds):
    """Fail instead of hanging when the block takes longer than ``seconds`` (and again every
    second after, should the first timeout be caught)."""
    def expired(signum, frame):
        raise TimeoutError(f"took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds, 1)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# A million jobs: one model with a 100 × 100 × 100 grid.
MILLION = pipeline_text(models=("nmf",), k="[2]", draws=1, params={
    "nmf": "{ n_init = %s, init_iter = %s, max_iter = %s }" % ((list(range(1, 101)),) * 3)})
