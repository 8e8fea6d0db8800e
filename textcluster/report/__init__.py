"""Reports from a batch ledger: the papers' tables, paired tests, plots and CSVs.

* :mod:`.results` — the finished jobs of a ledger (:func:`load_results`), grouped in sections.
* :mod:`.tables` — the papers' tables: mean ± std per k and the average, tested against a
  baseline; :mod:`.protocols` — sweeps, ablations, convergence traces.
* :mod:`.summary` — aggregation: mean ± std per k, paired Wilcoxon tests.
* :mod:`.overview` — the run in bullet points, versions, time, failed jobs and warnings.
* :mod:`.published` — the published numbers a pipeline file sets beside the reproduced ones.
* :mod:`.crossview` — agreement between clusterings of the same documents.
* :mod:`.plots` — one figure per metric (PNG and SVG); :mod:`.markup` — Markdown and HTML.
* :mod:`.writer` — :func:`write_report`: the whole report (Markdown, HTML, CSVs, figures).
"""

from .results import load_results, read_ledger
from .writer import write_report

__all__ = ["load_results", "read_ledger", "write_report"]
