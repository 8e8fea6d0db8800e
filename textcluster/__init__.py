"""textcluster: document clustering with the graph-regularized NMF family.

>>> import textcluster
>>> result = textcluster.run("tdt2", model="gnmf")        # doctest: +SKIP
>>> result.metrics["nmi"], result.labels[:5]              # doctest: +SKIP

Layers, each importing only from the ones before it: the math (:mod:`.models`, :mod:`.graph`,
:mod:`.metrics`, :mod:`.assign`) ← :mod:`.corpora` and :mod:`.pipeline` ← :mod:`.batch` and
:mod:`.report` ← :mod:`.cli`.
"""

__version__ = "0.1.0"

from ._errors import TextclusterError  # noqa: E402
from .api import run  # noqa: E402
from .batch import load_pipeline, run_batch  # noqa: E402
from .corpora import Corpus, load_corpus  # noqa: E402
from .metrics import METRICS, evaluate  # noqa: E402
from .models import MODELS, make_model  # noqa: E402
from .pipeline import Job, JobResult, represent, run_job  # noqa: E402
from .pipeline.bundle import load_model, save_model  # noqa: E402
from .report import write_report  # noqa: E402

__all__ = ["METRICS", "MODELS", "Corpus", "Job", "JobResult", "TextclusterError",
           "__version__", "evaluate", "load_corpus", "load_pipeline", "make_model",
           "represent", "run", "run_batch", "run_job", "write_report"]
__all__ += ["load_model", "save_model"]
