"""The run-model inputs of a run's choices: catalog entries, site, reliability profile,
precision, stack and price, as one dict of SI values with their domains checked.

:class:`RunChoices` names what a run is made of; :func:`base_inputs` turns it into the
scalar kernel inputs (the catalog part remembered per catalog and choice).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from hardware_catalog.loader import looks_like_path
from planner.engine.economics.ownership import cost_basis
from planner.engine.economics.pricing import commitment_term_s, price_quote, with_preemptions
from planner.engine.inputs.call_checks import check_catalog, check_given, check_names, check_scalars
from planner.engine.inputs.defaults import NAMED_CHOICES, stack_of
from planner.engine.inputs.domains import check
from planner.engine.inputs.method import method_inputs, method_of
from planner.engine.inputs.scenario import (
    DEFAULTS,
    Scenario,
    check_choices,
    check_model_support,
    check_precision,
    default_global_batch,
    execution_defaults,
    hardware_inputs,
    model_inputs,
    output_layer_at_low_precision,
    reliability_inputs,
    site_inputs,
    stack_for_precision,
    stack_inputs,
    value,
)
from planner.engine.run.model import critical_batch_tokens


@dataclass(frozen=True)
class RunChoices:
    """What a run is made of, before the layout: the catalog entries (ids, TOML paths or
    entries), the precision, checkpoint scheme, price basis and the run's size.

    Defaults are the CLI's (:data:`planner.engine.inputs.scenario.DEFAULTS`); ``seq_len`` None:
    the model's; ``global_batch`` None: 16 M tokens per step (``default_global_batch``).
    """

    model: object = DEFAULTS["model"]
    hardware: object = DEFAULTS["evaluate_hardware"]
    site: str = DEFAULTS["site"]
    site_class: str = DEFAULTS["site_class"]
    reliability: str = DEFAULTS["reliability"]
    precision: str = DEFAULTS["precision"]
    checkpoint: str = DEFAULTS["checkpoint"]
    cost_basis: str = DEFAULTS["cost_basis"]
    seq_len: object = None
    tokens: float = DEFAULTS["tokens"]
    global_batch: object = None
    pricing: str = DEFAULTS["pricing"]
    provider: str = DEFAULTS["provider"]
    spot_interruption: object = DEFAULTS["spot_interruption"]
    #: a stack id or entry; None: the accelerator's (:func:`with_stack`)
    stack: object = None
    #: the training method and its options (planner.engine.inputs.method; None: the default)
    method: str = DEFAULTS["method"]
    lora_rank: object = None
    lora_targets: object = None
    base_precision: object = None
    packing: object = None
    max_seq_len: object = None
    reference_logprobs: object = None

    def __post_init__(self):
        check_choices(precision=self.precision, checkpoint=self.checkpoint,
                      cost_basis=self.cost_basis)

    @classmethod
    def from_scenario(cls, scenario, hardware, model=None) -> RunChoices:
        """The choices of a :class:`~planner.engine.inputs.scenario.Scenario` on one accelerator
        (``model``: an entry to use instead of the scenario's id)."""
        return cls(**{f.name: getattr(scenario, f.name) for f in fields(cls)
                      if f.name not in ("model", "hardware")},
                   model=scenario.model if model is None else model, hardware=hardware)

    def scenario(self, **more) -> Scenario:
        """The :class:`~planner.engine.inputs.scenario.Scenario` of these choices (every choice
        carried over, the accelerator as a one-entry tuple; ``more``: its other fields),
        the inverse of :meth:`from_scenario`."""
        return Scenario(**{f.name: getattr(self, f.name) for f in fields(self)
                           if f.name != "hardware"}, hardware=(self.hardware,), **more)

    @classmethod
    def pick(cls, options: dict) -> RunChoices:
        """The choices among ``options`` (e.g. a command's options), the rest ignored."""
        return cls(**{f.name: options[f.name] for f in fields(cls) if f.name in options})


def canonical_choices(catalog, choices: RunChoices) -> RunChoices:
    """``choices`` with a model, accelerator or stack named as users type them ('GB200',
    'H100 SXM', 'Trillium': any case, an alias) replaced by its catalog id, so every
    later lookup, cache key and output column sees the id, and a stack left out resolved
    to the accelerator's (:func:`with_stack`); an unknown name raises the catalog's
    one-line did-you-mean error."""
    renamed = {}
    for field, kind in NAMED_CHOICES:
        name = getattr(choices, field)
        if isinstance(name, str) and not looks_like_path(name) \
                and name not in catalog.table(kind):
            renamed[field] = catalog.get(kind, name).id
    return with_stack(catalog, replace(choices, **renamed) if renamed else choices)


def with_stack(catalog, choices: RunChoices) -> RunChoices:
    """``choices`` with a stack left out resolved to its accelerator's for its model
    (:func:`~planner.engine.inputs.defaults.stack_of`) and precision
    (:func:`~planner.engine.inputs.scenario.stack_for_precision`)."""
    if choices.stack is not None:
        return choices
    accelerator = catalog.accelerator(choices.hardware) if isinstance(choices.hardware, str) \
        else choices.hardware
    stack = stack_of(catalog, accelerator, None, choices.model)
    return replace(choices, stack=stack_for_precision(catalog, accelerator, stack,
                                                      choices.precision))


def base_inputs(catalog, choices: RunChoices) -> dict[str, float]:
    """Scalar run-model inputs for a model on one accelerator at one site (domains checked).

    ``choices.stack`` names the software stack (catalog kind ``stack``: overlaps,
    fused-attention efficiency, launch overhead), or is a stack entry.

    The price per GPU-hour is resolved by :func:`planner.engine.economics.pricing.price_quote`
    (tier ``pricing``, ``provider``); ``pricing="owned"`` selects the TCO cost basis;
    ``pricing="spot"`` adds preemptions (``spot_interruption``: an interruption bucket or
    a monthly fraction) to the node failure rate of the Young/Daly/restart model.
    The catalog part is computed once per catalog and choice of entries (see
    :func:`catalog_inputs`).

    >>> from hardware_catalog import load_catalog
    >>> x = base_inputs(load_catalog(), RunChoices(model="llama3-8b", hardware="h100-sxm"))
    >>> x["hbm_bytes"], x["layers"]
    (80000000000.0, 32.0)
    """
    c = choices = with_stack(catalog, choices)
    check_names({"model": c.model, "hardware": c.hardware, "site": c.site,
                 "site_class": c.site_class, "reliability": c.reliability, "stack": c.stack,
                 "precision": c.precision, "pricing": c.pricing, "provider": c.provider})
    check_catalog(catalog)
    check_given("tokens", c.tokens)
    check_scalars({"tokens": c.tokens, "global_batch": c.global_batch, "seq_len": c.seq_len})
    check({"tokens": c.tokens, "global_batch": c.global_batch, "seq_len": c.seq_len})
    method = method_of(c)
    x = catalog_inputs(catalog, choices)
    m = catalog.model(c.model) if isinstance(c.model, str) else c.model
    x.update(method_inputs(method, x["seq_len"], float(m.seq_len)))
    x["tokens"] = float(choices.tokens)
    x["global_batch"] = float(choices.global_batch or default_global_batch(x["seq_len"]))
    check({"global_batch": x["global_batch"]})
    # the batch with which the run needs `tokens` (a plan over a range of batches: its
    # smallest; planner.engine.search.optimize)
    x["reference_batch"] = x["global_batch"]
    x["critical_batch_tokens"] = float(critical_batch_tokens(x))
    return x


#: catalog_inputs of recent calls: key -> (catalog, inputs); bounded by CACHED_RUNS.
_CATALOG_INPUTS: dict[tuple, tuple[object, dict[str, float]]] = {}
CACHED_RUNS = 256


def catalog_inputs(catalog, choices: RunChoices) -> dict[str, float]:
    """The run-model inputs that come from catalog entries (a new dict each call; the
    choices' ``tokens`` and ``global_batch`` are not read).

    Entries given by id are looked up, checked against their domains and priced once per
    catalog object and choice; entries given as objects or TOML paths (a user file may
    change between calls) are read every time.
    """
    c = choices
    names = (c.model, c.hardware, c.site, c.site_class, c.reliability, c.stack)
    cacheable = all(isinstance(v, str) and not looks_like_path(v) for v in names)
    key = (id(catalog), *names, c.precision, c.checkpoint, c.cost_basis, c.seq_len, c.pricing,
           c.provider, c.spot_interruption)
    try:
        hash(key)
    except TypeError:  # e.g. an array seq_len
        cacheable = False
    hit = _CATALOG_INPUTS.get(key) if cacheable else None
    if hit is not None and hit[0] is catalog:
        return dict(hit[1])
    x = _read_catalog_inputs(catalog, c)
    if cacheable:
        if len(_CATALOG_INPUTS) >= CACHED_RUNS:
            _CATALOG_INPUTS.clear()
        _CATALOG_INPUTS[key] = (catalog, x)
    return dict(x)


def _read_catalog_inputs(catalog, c: RunChoices) -> dict[str, float]:
    model, hardware, site, site_class = c.model, c.hardware, c.site, c.site_class
    reliability, precision, pricing, stack = c.reliability, c.precision, c.pricing, c.stack

    m = catalog.model(model) if isinstance(model, str) else model
    acc = catalog.accelerator(hardware) if isinstance(hardware, str) else hardware
    node = catalog.node(acc.node)
    profile = catalog.reliability_profile(reliability)
    software = catalog.stack(stack) if isinstance(stack, str) else stack
    basis = cost_basis(c)
    site_entry = catalog.site(site)
    check_precision(catalog, acc, precision, software)
    check_model_support(catalog, m, software)
    # catalog values and user files too: one table, before any kernel call, naming the entry
    x = {}
    for where, part in ((f"model '{m.id}'", model_inputs(m, c.seq_len)),
                        (f"accelerator '{acc.id}'", hardware_inputs(acc, node, precision, software)),
                        (f"site '{site}', site class '{site_class}'",
                         site_inputs(site_entry, basis,
                                     catalog.pue_entry(site_class, site_entry))),
                        (f"reliability profile '{reliability}'",
                         reliability_inputs(profile, c.checkpoint)),
                        ("planner/engine/inputs/execution.toml", execution_defaults()),
                        (f"stack '{software.id}'", stack_inputs(software, acc.id))):
        check(part, where=where)
        x.update(part)
    # the output layer runs at low precision where the stack converts it and the recipe
    # does not keep it in 16-bit
    x["low_precision_output_layer"] = output_layer_at_low_precision(
        precision, x["low_precision_output_layer"])
    # a part no fused attention kernel runs on (V100) caps the stack's kernel
    cap = getattr(acc, "fused_attention_head_dim_max", None)
    if cap is not None:
        x["fused_head_dim_max"] = min(x["fused_head_dim_max"], value(cap))
    x["price_usd_per_gpu_hour"] = price_quote(catalog, acc, pricing, c.provider).usd_per_gpu_hour
    x["commitment_term_s"] = commitment_term_s(pricing)
    if pricing == "spot":
        x["node_mtbf_s"] = with_preemptions(x["node_mtbf_s"], c.spot_interruption)
    return x
