"""The compiled run-model kernel: load it, and identify its version.

The kernel is generated from :func:`planner.engine.model.run_model` by
:mod:`planner.codegen.kernel` into ``planner/engine/_kernel_generated.py``
(committed), so the engine never imports sympy.  Regenerate with
``python -m planner.codegen``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from planner.engine.model import INPUTS, OUTPUTS

GENERATED = Path(__file__).with_name("_kernel_generated.py")


def kernel_hash() -> str:
    """Hash of the committed kernel's code: identifies the model version.

    ``tests/test_kernel.py`` checks that the committed kernel equals a fresh
    generation, and the sensitivity kernel records the hash it was derived from.
    """
    text = GENERATED.read_text()
    body = text[text.index("def kernel("):]
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def load_kernel():
    """The generated kernel function (imports numpy and scipy.special only)."""
    from planner.engine import _kernel_generated

    if _kernel_generated.INPUTS != tuple(INPUTS) or _kernel_generated.OUTPUTS != tuple(OUTPUTS):
        raise RuntimeError("planner/engine/_kernel_generated.py is stale: run python -m planner.codegen")
    return _kernel_generated.kernel

