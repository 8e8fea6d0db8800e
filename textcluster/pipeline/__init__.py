"""One job end to end: load → preprocess → represent → factorize → assign → evaluate."""

from .prepare import *  # noqa: F401,F403
from .prepare import (PREPROCESS_DEFAULTS, RESERVED_SETTINGS, Representation, RunResult, Timer,
                      check_k, evaluate, load_corpus, represent, run, split_settings)
