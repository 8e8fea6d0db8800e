"""Reports from a batch ledger: the papers' tables, paired tests, plots and CSVs.

* :mod:`.writer` — :func:`write_report`: the whole report (Markdown, HTML, CSVs, figures).
* :mod:`.summary` — aggregation: mean ± std per k, paired Wilcoxon tests.
* :mod:`.published` — the published numbers a pipeline file sets beside the reproduced ones.
* :mod:`.crossview` — agreement between clusterings of the same documents.
* :mod:`.plots` — one figure per metric (PNG and SVG); :mod:`.markup` — Markdown and HTML.
"""

from .writer import load_results, write_report

__all__ = ["load_results", "write_report"]
