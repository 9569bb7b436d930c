"""Precision recipes: which GEMMs of a run go at which precision (data/precisions/recipes.csv).

A recipe is what a user names with ``--precision`` (``fp8``, ``mxfp8``, ``nvfp4``, ``int8``
...): the precision whose peak its low-precision GEMMs run at, the share of the linear
layers that run there (the rest stay BF16: NVIDIA's NVFP4 accuracy recipe,
``nvfp4-bf16-tail``, keeps the final ~15 % of the layers in BF16, arXiv:2509.25149) and
whether their weight-gradient GEMMs stay in 16-bit (torchao's ``rowwise_with_gw_hp``), the
bytes per element of the GEMM inputs it caches for the backward pass, the rate of its
low-precision GEMMs relative to the per-tensor-scaled path (row-wise scales run slower
kernels, torchao's published benchmarks), and what a part (and stack) must have to run it.
Each row carries its source, date and whether it is an estimate.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from datetime import date
from functools import cache
from pathlib import Path

from .names import normalised_name

RECIPES_CSV = Path(__file__).resolve().parent / "data" / "precisions" / "recipes.csv"
#: GEMM precisions a recipe may run at: each has an accelerator field peak_<p>_flops_per_s.
GEMM_PRECISIONS = ("bf16", "tf32", "fp8", "fp6", "fp4", "int8")


@dataclass(frozen=True)
class Recipe:
    """One ``--precision`` choice."""

    name: str
    gemm_precision: str  # the peak the low-precision GEMMs run at (GEMM_PRECISIONS)
    low_precision_share: float  # share of the linear layers (their GEMM FLOPs) at
    #                             gemm_precision [1]
    cached_input_bytes: float  # bytes per element of a cached GEMM input (low-precision part) [B]
    gemm_rate_factor: float  # low-precision GEMM rate (scaling and casts included) over the
    #                          per-tensor-scaled path's at the same peak [1]
    cast_passes: int  # passes over a 16-bit GEMM input that quantise it: 0 (none), 1 (one
    #                   scale a tensor: the copy and its transpose in one pass), 2 (row- or
    #                   block-wise scales: each direction quantised on its own)
    requires: tuple[str, ...]  # further peaks the part must have (hardware block scaling)
    vendors: tuple[str, ...]  # the vendors whose parts run it (empty: any)
    stack_flag: str  # a stack field that must be 1 ('' : any stack)
    source: str
    as_of: date
    estimate: bool
    note: str
    aliases: tuple[str, ...] = ()  # other names users type for it ('bfloat16', 'fp8-delayed')
    wgrad_high_precision: int = 0  # 1: the weight-gradient GEMMs stay in 16-bit (their
    #                                inputs cached in 16-bit; torchao rowwise_with_gw_hp)
    output_layer_high_precision: int = 0  # 1: the output layer (LM head) stays in 16-bit
    #                                       whatever the stack converts (a BF16-tail recipe)

    @property
    def gemm_flop_share(self) -> float:
        """Share of the linear layers' GEMM FLOPs at ``gemm_precision`` [1]: the layers'
        share, less the weight-gradient GEMMs' third of each layer's FLOPs where they stay
        in 16-bit."""
        return self.low_precision_share * (1 - self.wgrad_high_precision / 3)


def _row(r: dict) -> Recipe:
    split = lambda text: tuple(t for t in (text or "").split(";") if t)  # noqa: E731
    recipe = Recipe(name=r["name"], gemm_precision=r["gemm_precision"],
                    low_precision_share=float(r["low_precision_share"]),
                    cached_input_bytes=float(r["cached_input_bytes"]),
                    gemm_rate_factor=float(r.get("gemm_rate_factor") or 1.0),
                    cast_passes=int(r["cast_passes"]),
                    requires=split(r["requires"]), vendors=split(r["vendors"]),
                    stack_flag=r["stack_flag"] or "", source=r["source"],
                    as_of=date.fromisoformat(r["as_of"]), estimate=r["estimate"] == "true",
                    note=r["note"], aliases=split(r.get("aliases")),
                    wgrad_high_precision=int(r.get("wgrad_high_precision") or 0),
                    output_layer_high_precision=int(r.get("output_layer_high_precision") or 0))
    if recipe.gemm_precision not in GEMM_PRECISIONS or not set(recipe.requires) <= set(
            GEMM_PRECISIONS):
        raise ValueError(f"{RECIPES_CSV.name}: recipe {recipe.name}: unknown precision")
    if not 0 < recipe.low_precision_share <= 1:
        raise ValueError(f"{RECIPES_CSV.name}: recipe {recipe.name}: share outside (0, 1]")
    if not 0 < recipe.gemm_rate_factor <= 1:
        raise ValueError(f"{RECIPES_CSV.name}: recipe {recipe.name}: gemm_rate_factor "
                         "outside (0, 1]")
    if recipe.wgrad_high_precision not in (0, 1) or (
            recipe.wgrad_high_precision and recipe.cached_input_bytes != 2):
        raise ValueError(f"{RECIPES_CSV.name}: recipe {recipe.name}: wgrad_high_precision "
                         "is 0 or 1, and 1 caches 2-byte inputs (the weight gradient reads "
                         "them)")
    if recipe.output_layer_high_precision not in (0, 1):
        raise ValueError(f"{RECIPES_CSV.name}: recipe {recipe.name}: "
                         "output_layer_high_precision is 0 or 1")
    if recipe.cast_passes not in (0, 1, 2) or (recipe.cast_passes == 0) != (
            recipe.gemm_precision in ("bf16", "tf32")):
        raise ValueError(f"{RECIPES_CSV.name}: recipe {recipe.name}: cast_passes must be 0 for "
                         "16- and 32-bit GEMMs, else 1 or 2")
    return recipe


@cache
def load_recipes() -> dict[str, Recipe]:
    """Every recipe by name, in the file's order."""
    with RECIPES_CSV.open(newline="", encoding="utf-8") as f:
        return {r.name: r for r in map(_row, csv.DictReader(f))}


def recipe_name(text: str) -> str:
    """The recipe a ``--precision`` value names as users type it ('FP8', 'fp8_cs' as
    Megatron-Bridge spells it, 'bfloat16', 'fp8-delayed', 'FP8 (delayed)', Composer's
    'amp_bf16'): lower case, with underscores, spaces and brackets as hyphens, an alias as
    its recipe; else that normalised text, for the caller's did-you-mean line."""
    key = normalised_name(text)
    qualified = re.fullmatch(r"([^()]+?)-*\(([^()]+)\)", key)
    if qualified:  # a bracketed qualifier: 'fp8-(delayed)' is 'fp8-delayed'
        key = f"{qualified[1]}-{qualified[2].strip('-')}"
    recipes = load_recipes()
    if key in recipes:
        return key
    return next((r.name for r in recipes.values() if key in r.aliases), key)
