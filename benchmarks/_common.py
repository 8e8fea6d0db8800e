"""What the benchmark scripts share: where the real corpora are."""

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA_DIR = REPO_ROOT.parent / "shared" / "data"


def resolve_data_dir(arg):
    """``--data-dir``, else ``$TEXTCLUSTER_DATA``, else ``../shared/data`` beside the repo."""
    if arg:
        return Path(arg)
    if os.environ.get("TEXTCLUSTER_DATA"):
        return Path(os.environ["TEXTCLUSTER_DATA"])
    return DEFAULT_DATA_DIR
