"""What a plan or evaluation assumed that the user may not have typed: stack, network,
site and its PUE, grid intensity, price basis and quantile (issue 41: a default is a
best case, so the screen says which).

One dict (:func:`assumptions`) for JSON and one line (:func:`assumptions_line`) for the
table, CSV and Markdown headers, so every format states the same assumptions.
"""

from __future__ import annotations

from planner.engine.economics import ownership
from planner.engine.economics.pricing import commitment_term_s
from planner.engine.inputs.defaults import DEFAULTS, MOE_STACK, cuda_part, stack_of
from planner.engine.inputs.scenario import LOW_PRECISIONS, precision_recipe, stack_for_precision


def network_text(catalog, hardware: list[str], extra: dict) -> str:
    """'non-blocking', or '1:7 above pods of 3,072 GPUs' (flags, else the nodes' own)."""
    ratio, pod = extra.get("oversubscription"), extra.get("pod_gpus")
    if ratio is None:
        nodes = {catalog.node(catalog.accelerator(hw).node) for hw in hardware}
        ratios = {float(n.oversubscription_ratio.value) for n in nodes
                  if n.oversubscription_ratio is not None}
        pods = {float(n.pod_gpus.value) for n in nodes if n.pod_gpus is not None}
        ratio = max(ratios) if ratios else None
        pod = max(pods) if pods else pod
    if ratio is None or ratio <= 1:
        return "non-blocking"
    return f"1:{ratio:g} oversubscribed" + (f" above pods of {pod:,.0f} GPUs" if pod else "")


def stack_label(catalog, stack, hardware: list[str], model=None, precision=None) -> str:
    """The stack a run or plan assumed: ``stack`` when named, else each accelerator's
    default for ``model`` and ``precision`` (:func:`~planner.engine.inputs.defaults.stack_of`,
    :func:`~planner.engine.inputs.scenario.stack_for_precision`): one id
    where they share it, else the most common one with the others named, e.g.
    'megatron-core-2025 (maxtext-xla on tpu-v6e)'."""
    if stack is not None:
        return stack if isinstance(stack, str) else stack.id
    by_part, cuda = {}, set()
    for hw in hardware:
        accelerator = catalog.accelerator(hw) if isinstance(hw, str) else hw
        part_stack = stack_for_precision(catalog, accelerator,
                                         stack_of(catalog, accelerator, None, model), precision)
        by_part.setdefault(part_stack, []).append(accelerator.id)
        if cuda_part(accelerator):
            cuda.add(part_stack)
    if not by_part:
        return DEFAULTS["stack"]
    # the most common; on a tie the one the CUDA parts run (the planner's default)
    common = max(sorted(by_part), key=lambda k: (len(by_part[k]), k in cuda))
    others = "; ".join(f"{k} on {', '.join(v)}" for k, v in sorted(by_part.items())
                       if k != common)
    return f"{common} ({others})" if others else common


def stack_hint(catalog, model: str, stack: str) -> str | None:
    """A line when an MoE model runs on the dense stack megatron-core-2025, named by the
    user (left out, an MoE model takes MOE_STACK; None otherwise)."""
    m = catalog.model(model)
    if not m.experts or stack != DEFAULTS["stack"] or MOE_STACK not in catalog.stacks:
        return None
    return (f"MoE model on the dense stack {stack}; --stack {MOE_STACK} (the default for MoE) matches MoE "
            "runs better")


#: NVIDIA's NVFP4 accuracy recipe, named beside the all-layer NVFP4 recipes.
TAIL_RECIPE = "nvfp4-bf16-tail"


def precision_text(precision) -> str | None:
    """How a low-precision recipe splits the GEMMs, the default a user may not know
    (None for the 16-bit and TF32 recipes): 'nvfp4: every transformer layer's linear GEMMs
    at FP4, ...' or 'fp8-hpu: 73 % of the transformer layers' linear GEMM FLOPs at FP8,
    ...' (the output layer's precision is the stack's, ``low_precision_output_layer``, but
    where the recipe keeps it in BF16: 'the rest, the attention core and the output layer')."""
    if not isinstance(precision, str):
        return None
    r = precision_recipe(precision)
    if r.gemm_precision not in LOW_PRECISIONS:
        return None
    at = r.gemm_precision.upper()
    share = ("every transformer layer's linear GEMMs" if r.low_precision_share == 1 else
             f"{100 * r.low_precision_share:.0f} % of the transformer layers' linear GEMM "
             "FLOPs")
    bf16 = ["the rest"] * (r.low_precision_share < 1) + ["the attention core"] \
        + ["the output layer"] * r.output_layer_high_precision
    rest = ", ".join(bf16[:-1]) + " and " + bf16[-1] if len(bf16) > 1 else bf16[0]
    text = f"{precision}: {share} at {at}, {rest} in BF16"
    if precision in ("fp4", "nvfp4"):  # NVIDIA's accuracy recipe beside the frameworks' one
        tail = 1 - precision_recipe(TAIL_RECIPE).low_precision_share
        text += (f" ({TAIL_RECIPE} keeps the final ~{100 * tail:.0f} % of the layers and the "
                 "output layer in BF16)")
    return text


def assumptions(catalog, *, model: str, stack: str, site: str, site_class: str,
                hardware: list[str], extra: dict, cost_basis: str, pricing: str,
                provider: str, confidence: float | None, precision=None) -> dict:
    """The assumptions of a run or plan, in SI units (PUE a ratio, grid in g/kWh);
    ``cost_basis``: the basis the run is costed by (:func:`planner.engine.economics.ownership.cost_basis`)."""
    site_entry = catalog.site(site)
    pue = catalog.pue_entry(site_class, site_entry).pue.value
    label = stack_label(catalog, stack, hardware, model, precision)
    out = {"stack": label,
           "network": network_text(catalog, hardware, extra),
           "site": site, "site_class": site_class,
           "pue": float(extra.get("pue", pue)),
           "grid_intensity_g_per_kwh": float(extra.get(
               "grid_intensity_g_per_kwh", site_entry.grid_intensity_g_per_kwh.value)),
           "cost_basis": cost_basis,
           "pricing": pricing, "provider": provider, "quantile": confidence,
           # the nominal run (every input at its catalog value) is not the model's median
           "quantile_label": "nominal" if confidence is None else f"P{100 * confidence:.6g}",
           "commitment": commitment(pricing, cost_basis, extra),
           "stack_hint": stack_hint(catalog, model, label),
           "precision": precision_text(precision)}
    return out


def commitment(pricing: str, cost_basis: str, extra: dict) -> dict | None:
    """The reserved tier's committed term [s] and the share of its unused time resold or
    reused (None for pay-as-you-go tiers and the TCO basis)."""
    term_s = commitment_term_s(pricing)
    if not term_s or cost_basis == "tco":
        return None
    return {"term_s": term_s, "reuse_fraction": float(extra.get("commitment_reuse_fraction", 0.0))}


def commitment_text(a: dict) -> str:
    """', billed for the whole 365-day term (0 % of its unused time resold)' or ''."""
    c = a.get("commitment")
    if not c:
        return ""
    return (f", billed for the whole {c['term_s'] / 86400:,.0f}-day term ("
            f"{100 * c['reuse_fraction']:.0f} % of its unused time resold or reused; "
            "--commitment-reuse)")


def scenario_assumptions(catalog, s, hardware: list[str]) -> dict:
    """:func:`assumptions` of a :class:`planner.engine.inputs.scenario.Scenario`."""
    return assumptions(catalog, model=s.model, stack=s.stack, site=s.site,
                       site_class=s.site_class, hardware=hardware, extra=s.extra,
                       cost_basis=ownership.cost_basis(s), pricing=s.pricing, provider=s.provider,
                       confidence=s.confidence, precision=s.precision)


def assumptions_line(a: dict) -> str:
    """One line: 'stack megatron-core-2025, network non-blocking, site us-average (class
    hyperscale, PUE 1.10, grid 380 g/kWh), cost by cloud at on-demand prices (median),
    nominal run (not the P50 of the uncertainty model)' (or 'quantile P90 ...')."""
    site_class = ("its own PUE" if a["site_class"] == "site" else f"class {a['site_class']}")
    quantile = ("nominal run (not the P50 of the uncertainty model)" if a["quantile"] is None
                else f"quantile P{100 * a['quantile']:.6g} (uncertainty model)")
    precision = f"precision {a['precision']}, " if a.get("precision") else ""
    return (f"stack {a['stack']}, {precision}network {a['network']}, site {a['site']} ({site_class}, "
            f"PUE {a['pue']:.2f}, grid {a['grid_intensity_g_per_kwh']:,.0f} g/kWh), cost by "
            f"{a['cost_basis']} at {a['pricing']} prices ({a['provider']})"
            f"{commitment_text(a)}, {quantile}")
