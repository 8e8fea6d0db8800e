"""``textcluster assign BUNDLE DOCS --out DIR``: new documents into a saved model's clusters."""

import click

from .._errors import InvalidInputError
from ..batch.overrides import parse_override
from ..pipeline import load_corpus
from ..pipeline.align import align_assigned, read_previous, write_alignment
from ..pipeline.bundle import load_model, write_assignment
from ._common import data_dir_option, user_errors


@click.command("assign")
@click.argument("bundle", type=click.Path())
@click.argument("docs")
@click.option("--out", type=click.Path(file_okay=False), required=True,
              help="Folder for clusters.csv and assign.json.")
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE",
              help="Option of the corpus loader that reads DOCS; repeatable "
                   "(text_column=body, label_column=topic, id_column=ticket). The "
                   "preprocessing is the bundle's.")
@click.option("--align-to", type=click.Path(file_okay=False), default=None,
              metavar="PREVIOUS_OUT",
              help="Renumber the clusters to best match those of an earlier run or assign "
                   "(its --out folder) and write changes.csv and moved.csv into --out.")
@data_dir_option
@user_errors
def assign_command(bundle, docs, out, settings, data_dir, align_to):
    """Place new documents in the clusters of a model saved with textcluster run
    --save-model, and write them as run writes its clusters.

    BUNDLE is the folder --save-model wrote. DOCS is read as textcluster run reads a corpus:
    the path of a .csv/.jsonl/.json/.parquet file or of a folder of .txt files, a corpus
    name, or hf:NAME. The documents are tokenized and weighted as the training documents
    were (its vocabulary and idf: unknown terms are dropped), assigned with the model
    (textcluster models NAME says how it places new documents) and scored against the
    training clusters. clusters.csv has run's columns (doc_id, cluster, label, score) and
    cluster ids; assign.json the bundle, the documents, the counts per cluster and the
    documents left out because they hold no known term.

    \b
    Examples:
      textcluster run news/ --model nmf -k 8 --save-model models/news
      textcluster assign models/news new_docs/ --out runs/new
      textcluster assign models/news tickets.csv --set text_column=body --out runs/tickets
    """
    model = load_model(bundle)  # a bad bundle fails before the documents are read
    previous = read_previous(align_to) if align_to else None
    corpus = load_corpus(docs, data_dir=data_dir, **loader_options(settings))
    assigned = model.assign(corpus)  # everything computed before anything is written
    alignment = (align_assigned(assigned, model.vectorizer.vocabulary, previous)
                 if previous else None)
    folder = write_assignment(assigned, model, out, source=docs)
    if alignment:
        write_alignment(alignment, folder)
    click.echo(f"{len(assigned.labels)} of {assigned.n_docs} documents of {docs} assigned to "
               f"the {model.k} clusters of {bundle} (model {model.model_name}, fitted on "
               f"{model.meta['corpus']['name']})")
    terms = {c["id"]: c["top_terms"][:5] for c in model.meta["clusters"]}
    for cluster, n in assigned.counts().items():
        click.echo(f"  {cluster:>3} ({n} docs): {', '.join(terms.get(cluster, []))}")
    if assigned.dropped:
        click.echo(f"{len(assigned.dropped)} document(s) left out: no term of the model's "
                   f"vocabulary (assign.json lists them)")
    if alignment:
        click.echo(alignment.summary)
    click.echo(f"results written to {folder}")


def loader_options(settings):
    """``--set`` texts as corpus loader options (``corpus.NAME`` or ``NAME``)."""
    options = {}
    for text in settings:
        key, value = parse_override(text)
        stage, _, name = key.rpartition(".")
        if stage not in ("", "corpus"):
            raise InvalidInputError(
                f"--set {text!r}: assign takes options of the corpus loader only (e.g. "
                f"text_column=body); the preprocessing and the model are the bundle's")
        options[name] = value
    return options
