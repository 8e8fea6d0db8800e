"""Shared fixtures: where the real corpora are, for tests marked ``realdata``."""

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Fuzz budgets: "ci" (the default, bounded so the whole suite stays in minutes) and "long", on
# demand: HYPOTHESIS_PROFILE=long python -m pytest tests/test_fuzz_*.py
settings.register_profile("ci", max_examples=60, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=2000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# The shared data folder that sits next to a checkout: <repo>/../shared/data.
SIBLING_DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def pytest_collection_modifyitems(items):
    """A test that uses ``real_data_dir`` is a ``realdata`` test even if not marked so."""
    for item in items:
        if "real_data_dir" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.realdata)


@pytest.fixture(scope="session")
def real_data_dir():
    """The folder holding the real corpora: ``$TEXTCLUSTER_DATA``, else ``../shared/data``
    beside the repository. Skips the test when neither exists."""
    env = os.environ.get("TEXTCLUSTER_DATA")
    folder = Path(env) if env else SIBLING_DATA_DIR
    if not folder.is_dir():
        origin = "$TEXTCLUSTER_DATA" if env else "the shared data folder beside the repository"
        pytest.skip(f"real corpora not available: {origin} ({folder}) is not a folder")
    return folder.resolve()  # absolute: tests may link to its files from elsewhere


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory):
    """Parsed corpora and term counts cached by the tests stay out of the user's cache."""
    patch = pytest.MonkeyPatch()
    patch.setenv("TEXTCLUSTER_CACHE", str(tmp_path_factory.mktemp("textcluster-cache")))
    yield
    patch.undo()
