"""Command-line options of a planning scenario, shared by ``capplan plan`` and ``plot``.

:func:`scenario_options` declares the search's options (``python -m planner.codegen``
writes them out into each command, then the method's and the environment's);
:func:`resolve_scenario` applies a ``--scenario`` file under the flags the user
typed and builds the :class:`~planner.scenario.Scenario`.
"""

from __future__ import annotations

import math
from dataclasses import fields

import typer

from hardware_catalog.recipes import recipe_name
from planner.cli.common import (
    CheckpointOption,
    ModelOption,
    PrecisionOption,
    SiteClassOption,
    SitesOption,
    StackOption,
    TokensOption,
)
from planner.cli.environment_options import ENVIRONMENT, option_names, price_files
from planner.cli.method_options import method_options
from planner.cli.numbers import batch_or_range, si_count, si_float
from planner.engine.inputs.defaults import DEFAULTS, NAMED_CHOICES
from planner.errors import CapplanError, shown


def scenario_options(
    ctx: typer.Context,
    scenario_file: str = typer.Option(None, "--scenario", "-s",
                                      help="TOML scenario file (flags override it)."),
    model: ModelOption = DEFAULTS["model"],
    tokens: TokensOption = DEFAULTS["tokens"],
    hardware: str = typer.Option(DEFAULTS["hardware"], "--hardware", "-H",
                                 help="Comma-separated accelerator ids or aliases (any case: GB200, "
                                 "H100, Trillium), 'all', or 'market' (only accelerators with a "
                                 "market price: >= 3 listings from >= 2 providers)."),
    min_gpus: int = typer.Option(DEFAULTS["min_gpus"], parser=si_count,
                                 help="Smallest cluster considered."),
    max_gpus: int = typer.Option(DEFAULTS["max_gpus"], parser=si_count,
                                 help="Largest cluster considered (16k = 16,000)."),
    global_batch: str = typer.Option(
        None, parser=batch_or_range,
        help="Global batch [sequences] (default ~16M tokens), or a range LO..HI (e.g. "
        "1024..8192) from which the plan chooses the batch per layout; the tokens needed "
        "then grow with the batch beyond the critical batch (--tokens is what the run "
        "needs at LO; docs/model.md, 'Batch as a decision')."),
    seq_len: int = typer.Option(None, help="Sequence length (default: the model's)."),
    critical_batch: float = typer.Option(
        None, parser=si_float,
        help="Critical batch [tokens] beyond which a larger --global-batch needs more tokens "
        "(default: Kaplan et al. 2020 eq. 5.3 at the model's loss on --tokens, e.g. 15M for "
        "Llama 3 70B on 15T)."),
    deadline_days: float = typer.Option(
        DEFAULTS["deadline_days"], help="Finish within this many days ('inf' for no deadline)."),
    budget_usd: float = typer.Option(None, parser=si_float,
                                     help="Spend at most this [USD] (5M = 5e6)."),
    max_power_mw: float = typer.Option(None, help="Facility peak power cap [MW]."),
    site: SitesOption = DEFAULTS["site"],
    site_class: SiteClassOption = DEFAULTS["site_class"],
    objective: str = typer.Option(DEFAULTS["objective"], help="time | cost | energy | carbon | tcdp | cci (the headline)."),
    precision: PrecisionOption = DEFAULTS["precision"],
    stack: StackOption = None,
    checkpoint: CheckpointOption = DEFAULTS["checkpoint"],
    knee_threshold: float = typer.Option(DEFAULTS["knee_threshold"], help="Marginal scaling efficiency of the knee."),
):
    """Holder of the search options (never called); the environment options follow."""


#: Scenario keys (everything but the typer context and the file itself).
SCENARIO_KEYS = tuple(k for k in option_names(scenario_options, method_options, *ENVIRONMENT)
                      if k != "scenario_file")


def _catalog(dirs):
    from hardware_catalog import load_catalog

    return load_catalog(tuple(dirs or ()))


#: Options whose choices are all lower case (precision recipes, recompute policies)
LOWER_CASE_OPTIONS = ("precision", "recompute")


def canonical_names(values: dict) -> dict:
    """``values`` with the models, accelerators and stacks named as users type them
    ('GB200', 'H100 SXM', 'Trillium': any case, an alias) as their catalog ids, so the
    reports print the ids, and the precision and recompute choices in lower case; a name
    the catalog does not know is left for the command to refuse with its did-you-mean
    line."""
    out = dict(values)
    for option in LOWER_CASE_OPTIONS:  # 'FP8', 'NVFP4', 'Full': every choice is lower case
        if isinstance(values.get(option), str):
            out[option] = values[option].strip(" ").lower()
    if isinstance(values.get("precision"), str):  # 'fp8_cs', 'bfloat16': the recipe's name
        out["precision"] = recipe_name(values["precision"])
    if not any(isinstance(values.get(k), str) for k, _ in NAMED_CHOICES):
        return out
    catalog = _catalog(values.get("catalog"))
    for option, kind in NAMED_CHOICES:
        given = values.get(option)
        if isinstance(given, str):
            names = given.split(",") if option == "hardware" else [given]
            out[option] = ",".join(catalog.canonical(kind, n.strip(" ")) for n in names)
    return out


def resolve_scenario(options: dict):
    """(Scenario, merged values) from the options, a ``--scenario`` file under the flags."""
    from planner.cli import scenario_file as sf
    from planner.cli.fault_options import fault_inputs
    from planner.engine.inputs.scenario import NETWORK_FLAGS, network_overrides

    values = {k: options[k] for k in SCENARIO_KEYS}
    v = canonical_names(sf.merge(options["ctx"], {**values, "uncertainty": None,
                                                  "ownership": None}, options["scenario_file"]))
    if any(dict(p.method).get("method") == "grpo" for p in v.get("phases") or ()):
        raise CapplanError("method = \"grpo\" phases run in capplan evaluate --scenario "
                           "(a search plans one method; plan --method grpo plans an RL run)")
    scenario = scenario_of(v, extra={
        **fault_inputs(v), **({} if v["critical_batch"] is None else
                              {"critical_batch_tokens": float(v["critical_batch"])}),
        **network_overrides(v["network"], _catalog(v["catalog"]) if v["network"] else None,
                            **{k: v[k] for k in NETWORK_FLAGS})})
    return scenario, v


#: Options whose :class:`~planner.engine.inputs.scenario.Scenario` field has another name or
#: form (:func:`scenario_of` converts them); an option named as a field is copied.
CONVERTED = frozenset({"global_batch", "hardware", "deadline_days", "catalog", "prices",
                       "ownership"})


def scenario_of(values: dict, **more):
    """The :class:`~planner.engine.inputs.scenario.Scenario` of a command's options (or a scenario
    file's values), the one conversion every searching command uses: an option named as a
    field is copied; ``--global-batch LO..HI`` becomes the range and its low end,
    ``--hardware a,b`` a tuple, ``--deadline-days inf`` no deadline, ``--catalog`` and
    ``--prices`` the catalog directories and price files, ``[ownership]`` a dict; ``more``:
    fields the command sets itself (``extra``: the run-model inputs of its flags)."""
    from planner.engine.inputs.scenario import Scenario

    v = values
    out = {f.name: v[f.name] for f in fields(Scenario) if f.name in v and f.name not in CONVERTED}
    if "global_batch" in v:
        batch = v["global_batch"]
        batch_range = tuple(batch) if isinstance(batch, tuple | list) else None
        out.update(global_batch=batch_range[0] if batch_range else batch,
                   global_batch_range=batch_range)
    if "hardware" in v:
        out["hardware"] = tuple(h.strip() for h in v["hardware"].split(",") if h.strip())
        if not out["hardware"]:  # '' or ',,': say so rather than plan the whole catalog
            raise CapplanError(f"--hardware {shown(v['hardware'])} names no accelerator; "
                               "give ids or aliases, comma-separated (h100-sxm,mi300x), "
                               "'all' or 'market'")
    if "deadline_days" in v:
        out["deadline_days"] = None if v["deadline_days"] in (None, math.inf) else \
            v["deadline_days"]
    if "catalog" in v:
        out["catalog_dirs"] = tuple(v["catalog"] or ())
    if "prices" in v:
        out["price_files"] = price_files(v["prices"])
    if "ownership" in v:
        out["ownership"] = dict(v["ownership"] or {})
    return Scenario(**{**out, **more})
