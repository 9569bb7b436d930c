import atexit
import os
import shutil
import tempfile

import pytest

os.environ.setdefault("COLUMNS", "120")

# Nothing the suite runs writes into the developer's home: capplan's cache folder (the
# parsed catalog) and matplotlib's config and font cache go to a folder of this session,
# removed when it ends.  Subprocesses inherit it.
_SESSION_DIR = tempfile.mkdtemp(prefix="capplan-tests-")
atexit.register(shutil.rmtree, _SESSION_DIR, ignore_errors=True)
os.environ["CAPPLAN_CACHE_DIR"] = os.path.join(_SESSION_DIR, "cache")
os.environ["XDG_CACHE_HOME"] = os.path.join(_SESSION_DIR, "xdg-cache")
os.environ["MPLCONFIGDIR"] = os.path.join(_SESSION_DIR, "matplotlib")


@pytest.fixture(scope="session")
def catalog():
    from hardware_catalog import load_catalog

    return load_catalog()
