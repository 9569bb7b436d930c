"""Names as users type them: the one normalisation that catalog ids and aliases
(:meth:`hardware_catalog.loader.Catalog.get`) and precision recipes
(:func:`hardware_catalog.recipes.recipe_name`) are compared in. Standard library only, so
the CLI can import it at start-up."""

from __future__ import annotations

import re


def normalised_name(name: str) -> str:
    """An id as users type it, compared case-insensitively with spaces and underscores as
    hyphens ('GB200', 'H100 SXM', 'tpu_v6e'); other characters (a newline) stay and match
    nothing."""
    return re.sub(r"[ _]+", "-", str(name).strip(" ").lower())
