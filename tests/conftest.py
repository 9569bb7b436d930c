import os

import pytest

os.environ.setdefault("COLUMNS", "120")


@pytest.fixture(scope="session")
def catalog():
    from hardware_catalog import load_catalog

    return load_catalog()
