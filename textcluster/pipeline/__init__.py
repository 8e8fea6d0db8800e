"""One job end to end: load → preprocess → represent → factorize → assign → evaluate.

* :mod:`.prepare` — :func:`load_corpus` (through the cache) and :func:`represent` (tf-idf).
* :mod:`.job` — :class:`Job` and :func:`run_job`, the one run path of ``textcluster run``
  and of every batch job.
* :mod:`.protocol` — the papers' evaluation protocols (class subsets, labelled fractions).
* :mod:`.export` — ``clusters.csv``, ``cluster_terms.csv``, ``metrics.json``, ``run.json``.
"""

from .job import Job, JobResult, RepresentationCache, Timer, run_job, score
from .prepare import PREPROCESS_DEFAULTS, Representation, check_k, load_corpus, represent

__all__ = ["PREPROCESS_DEFAULTS", "Job", "JobResult", "Representation", "RepresentationCache",
           "Timer", "check_k", "load_corpus", "represent", "run_job", "score"]
