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


# ---- CPU time per test: `python -m pytest --cpu-times FILE` (docs/development.md) --------
# CPU seconds do not depend on the machine's load as wall seconds do: each test's own CPU
# time plus its waited-for subprocesses' (installs, LibreOffice, the CLI), appended to FILE
# as "seconds nodeid" lines by every xdist worker.

def pytest_addoption(parser):
    parser.addoption("--cpu-times", metavar="FILE",
                     help="append each test's CPU seconds (with its subprocesses') to FILE")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    path = item.config.getoption("--cpu-times")
    if not path:
        yield
        return
    import resource
    import time

    def used():
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        return time.process_time() + children.ru_utime + children.ru_stime

    start = used()
    yield
    with open(path, "a") as handle:
        handle.write(f"{used() - start:.2f} {item.nodeid}\n")
