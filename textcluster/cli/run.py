"""``textcluster run CORPUS --model MODEL``."""

from pathlib import Path

import click

from .. import pipeline
from ..export import write_run
from ..models import MODELS
from ._common import ProgressBar, data_dir_option, parse_settings, user_errors

METRIC_ROWS = ["purity", "entropy", "nmi", "accuracy", "ari"]


@click.command("run")
@click.argument("corpus")
@click.option("--model", "-m", default="gnmf", show_default=True,
              help=f"Model name: {', '.join(MODELS.names())}.")
@click.option("--k", type=click.IntRange(min=1), default=None,
              help="Number of clusters (default: number of classes).")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed.")
@click.option("--out", type=click.Path(file_okay=False), default=None,
              help="Folder for clusters.csv, cluster_terms.csv, metrics.json, run.json.")
@click.option("--set", "settings", multiple=True, metavar="NAME=VALUE",
              help="Corpus, preprocessing or model setting; repeatable (e.g. --set lam=10).")
@data_dir_option
@user_errors
def run_command(corpus, model, k, seed, out, settings, data_dir):
    """Cluster one corpus with one model, print the metrics and write the results.

    \b
    Examples:
      textcluster run tdt2 --model gnmf --out runs/tdt2
      textcluster run reuters --model nmf --set top=30 --set ncw=true
      textcluster run reuters-cai --model gnmf --k 20 --set lam=100 --set scaling=cai
    """
    if out:  # fail now, not after a long run, when the folder cannot be created
        Path(out).mkdir(parents=True, exist_ok=True)
    result = pipeline.run(corpus, model, k=k, seed=seed, data_dir=data_dir,
                          settings=parse_settings(settings), progress=ProgressBar)
    click.echo(format_table(result))
    if out:
        click.echo(f"results written to {write_run(result, out)}")


def format_table(result):
    """The metrics as an aligned two-column table."""
    m = result.metrics
    lines = [f"corpus {result.corpus.name}: {m['n_docs']} documents, "
             f"{result.representation.X.shape[1]} terms, {m['n_clusters']} clusters",
             f"model {result.params['model']}"]
    if "nmi" not in m:
        lines.append("no class labels: purity, entropy, NMI, accuracy and ARI need labels")
    for name in METRIC_ROWS:
        if name in m:
            lines.append(f"  {name:<10}{m[name]:.4f}")
    timing = ", ".join(f"{stage} {sec:.1f}s" for stage, sec in result.timings.items())
    lines.append(f"  time      {timing}")
    return "\n".join(lines)
