"""``textcluster run CORPUS --model MODEL``."""

from pathlib import Path

import click
import numpy as np
import pandas as pd

from .._errors import MissingDependencyError
from ..api import run
from ..models import MODELS
from ..pipeline.align import align_result, read_previous, write_alignment
from ..pipeline.bundle import Bundle, check_save
from ..pipeline.export import OVER_TIME_FILE, top_terms, write_run
from ..pipeline.timeline import PERIODS
from ..report import plots
from ._common import ClusterCountParam, ProgressBar, data_dir_option, user_errors

METRIC_ROWS = ["purity", "entropy", "nmi", "accuracy", "rand_index", "ari"]


@click.command("run")
@click.argument("corpus")
@click.option("--model", "-m", default="gnmf", show_default=True,
              help=f"Model name: {', '.join(MODELS.names())} (textcluster models).")
@click.option("--k", "-k", type=ClusterCountParam(), default=None,
              help="Number of clusters (default: number of classes); 'auto' chooses it without "
                   "labels among 3-30, 'MIN:MAX' among MIN-MAX (the criterion's curve in "
                   "run.json: cluster_count).")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed.")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Folder for clusters.csv, cluster_terms.csv, metrics.json, run.json.")
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE",
              help="Corpus, preprocessing or model setting; repeatable. A bare name "
                   "(lam=10, min_df=2, top=30) or a dotted key (model.weighting=heat, "
                   "models.gnmf.params.lam=10); values are TOML. graph=citations "
                   "regularizes with the corpus' own graph (CiteULike).")
@click.option("--terms", "n_terms", type=click.IntRange(min=0), default=5, show_default=True,
              help="Top terms (tags, users) printed per cluster; 0 prints none.")
@click.option("--labeled-fraction", type=click.FloatRange(0, 1, min_open=True), default=None,
              help="Semi-supervised models: show them the labels of this share of each "
                   "class (drawn with --seed).")
@click.option("--labeled-per-class", type=click.IntRange(min=1), default=None,
              help="Semi-supervised models: show them this many labels per class.")
@click.option("--no-cache", is_flag=True,
              help="Neither read nor write the cache of parsed corpora and term counts.")
@click.option("--align-to", type=click.Path(file_okay=False), default=None,
              metavar="PREVIOUS_OUT",
              help="Renumber the clusters to best match those of an earlier run (its --out "
                   "folder) and write changes.csv and moved.csv into --out.")
@click.option("--save-model", type=click.Path(file_okay=False), default=None, metavar="DIR",
              help="Save the fitted model as a bundle in DIR (a new or empty folder, or a "
                   "bundle to replace), to place new documents with textcluster assign.")
@click.option("--period", type=click.Choice(["auto", *PERIODS]), default="auto",
              show_default=True,
              help="Documents with dates (a table's date column): the period of "
                   "clusters_over_time.csv and its figure.")
@data_dir_option
@user_errors
def run_command(corpus, model, k, seed, out, settings, n_terms, labeled_fraction,
                labeled_per_class, no_cache, data_dir, align_to, save_model, period):
    """Cluster one corpus with one model, print the metrics and write the results.

    CORPUS is a corpus name (tdt2, reuters, reuters-cai, sector, citeulike-t:tags, ...),
    hf:NAME for a Hugging Face dataset, or the path of a .csv/.jsonl/.json/.parquet file or
    of a folder of .txt files.

    \b
    Examples:
      textcluster run tdt2 --model gnmf --out runs/tdt2
      textcluster run reuters --model nmf --set top=30 --set ncw=true
      textcluster run reuters-cai --model gnmf -k 20 --set lam=100 --set scaling=cai
      textcluster run citeulike-t:tags --model gnmf --k 20 --set graph=citations
      textcluster run my_docs.csv --set text_column=body --set label_column=topic
      textcluster run my_docs.csv --k auto
      textcluster run tdt2 --model sodnmf --labeled-fraction 0.1
    """
    MODELS.get(model, suggest=True)  # an unknown name fails before the folder is made
    if out:  # fail now, not after a long run, when the folder cannot be created
        Path(out).mkdir(parents=True, exist_ok=True)
    previous = read_previous(align_to) if align_to else None  # a wrong folder fails now
    if save_model:  # a folder it cannot replace, or a model it cannot save, fails now
        check_save(save_model, model)
    result = run(corpus, model, k=k, seed=seed, data_dir=data_dir, settings=settings,
                 progress=ProgressBar, labeled_fraction=labeled_fraction,
                 labeled_per_class=labeled_per_class, use_cache=not no_cache)
    alignment = align_result(result, previous) if previous else None  # before any output
    bundle = Bundle.from_result(result) if save_model else None  # after the renumbering
    click.echo(format_table(result))
    if alignment:
        click.echo(alignment.summary)
    if n_terms:
        click.echo(format_top_terms(result, n_terms))
    if out:
        if alignment:
            write_alignment(alignment, out)
        click.echo(f"results written to {write_run(result, out, period=period)}")
        if result.corpus.dates is not None:
            plot_over_time(Path(out))
    if bundle is not None:
        click.echo(f"model saved to {bundle.save(save_model)}")


def plot_over_time(out):
    """``clusters_over_time.png``/``.svg`` beside the CSV, when matplotlib is installed."""
    try:
        figure = plots.clusters_over_time(pd.read_csv(out / OVER_TIME_FILE),
                                          title="documents per cluster")
    except MissingDependencyError as exc:
        click.echo(f"no figure of the clusters over time: {exc}", err=True)
        return
    plots.save(figure, out / OVER_TIME_FILE.removesuffix(".csv"))


def format_table(result):
    """The metrics as an aligned two-column table."""
    m = result.metrics
    lines = [f"corpus {result.corpus.name}: {m['n_docs']} documents, "
             f"{result.X.shape[1]} terms, {m['n_clusters']} clusters",
             f"model {result.job.model}"]
    meta = result.corpus.metadata
    for key, what, usual in (("text_column", "texts", "text"),
                             ("label_column", "classes", "label"),
                             ("id_column", "document ids", "id")):
        if meta.get(key) not in (None, usual):
            lines.append(f"{what} from the column {meta[key]!r}")
    if "nmi" not in m:
        lines.append("no class labels: purity, entropy, NMI, accuracy and ARI need labels")
    unlabelled = [f"{name}_unlabeled" for name in METRIC_ROWS]
    for name in METRIC_ROWS + unlabelled:
        if name in m:
            lines.append(f"  {name:<16}{m[name]:.4f}")
    for value in result.objective():
        lines.append(f"  {'objective':<16}{value:.6g}")
    selection = getattr(result.model, "lam_selection_", None)
    if selection is not None:
        name = result.model.strength_parameter
        lines.append(f"  {name:<16}{m['lam']:g}, chosen without labels among "
                     f"{len(selection['candidates'])} candidates (run.json: lam_selection; "
                     f"--set {name}=… fixes it)")
    count = getattr(result.model, "cluster_count_", None)
    if count is not None:
        candidates = count["candidates"]
        lines.append(f"  {'k':<16}{count['k']}, chosen without labels among "
                     f"{candidates[0]}-{candidates[-1]} in {count['seconds']:.0f}s "
                     "(run.json: cluster_count)")
    timing = ", ".join(f"{stage} {sec:.1f}s" for stage, sec in result.timings.items())
    lines.append(f"  {'time':<16}{timing}")
    return "\n".join(lines)


def format_top_terms(result, n_terms):
    """Each cluster's size and heaviest terms (tags, users), one line per cluster."""
    features = result.corpus.metadata.get("features", "terms")
    terms = top_terms(result, n_terms=n_terms)
    sizes = dict(zip(*np.unique(result.labels, return_counts=True)))
    lines = [f"top {features} per cluster:"]
    for cluster, group in terms.groupby("cluster"):
        lines.append(f"  {cluster:>3} ({sizes[cluster]} docs): {', '.join(group['term'])}")
    return "\n".join(lines)
