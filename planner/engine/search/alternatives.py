"""What a typical alternative would change (issue 41 item 2): the alternative software
stack and site class a run is compared with, and one change as data and as a line
("with --stack torchtitan-fsdp2: +35 % GPU-hours"). The re-evaluations themselves are
the callers' (planner.analysis.winner_alternatives for a plan, capplan evaluate for one run).

The alternative stack is PyTorch's FSDP2 stack (torchtitan) when the run uses another
one, else the default stack; the alternative PUE is the site's own (its region's stated
PUE, ``--site-class site``) when the run used a site class, else the default class's.
"""

from __future__ import annotations

from planner.engine.inputs.defaults import DEFAULTS

#: The typical alternative to a tuned Megatron-Core stack: PyTorch FSDP2 (torchtitan),
#: hardware_catalog/data/stacks/torchtitan-fsdp2.toml.
ALTERNATIVE_STACK = "torchtitan-fsdp2"
#: The site class whose PUE is the site's own (hardware_catalog SITE_OWN_PUE).
OWN_PUE = "site"


def alternative_stack(stack: str, cuda: bool = True) -> str | None:
    """The stack to compare ``stack`` with; None on a part the CUDA stacks do not run on
    (``cuda`` False: :func:`~planner.engine.inputs.defaults.cuda_part`, the TPUs)."""
    if not cuda:
        return None
    return ALTERNATIVE_STACK if stack != ALTERNATIVE_STACK else DEFAULTS["stack"]


def alternative_site_class(site_class: str) -> str:
    """The site class to compare ``site_class`` with (the site's own PUE, or the default)."""
    return OWN_PUE if site_class != OWN_PUE else DEFAULTS["site_class"]


def settled_note(run: dict, alternative: dict) -> str:
    """' (at ZeRO-3, selective recompute)': the ZeRO stage and recompute an alternative
    stack's run (``alternative``: its ``zero`` and ``recompute``) took that the run's did
    not; '' where it kept both."""
    moved = [f"ZeRO-{alternative['zero']}"] * (alternative["zero"] != run["zero"]) \
        + [f"{alternative['recompute']} recompute"] * (alternative["recompute"]
                                                       != run["recompute"])
    return f" (at {', '.join(moved)})" if moved else ""


def change(flag: str, quantity: str, label: str, base: float, alt: float | None,
           fits: bool = True, note: str = "") -> dict:
    """One alternative: its flag, the quantity compared, relative change, one line."""
    if not fits or alt is None:
        return {"flag": flag, "quantity": quantity, "relative_change": None,
                "text": f"with {flag}{note}: the layout does not fit"}
    rel = alt / base - 1 if base else 0.0
    return {"flag": flag, "quantity": quantity, "relative_change": rel,
            "text": f"with {flag}{note}: {100 * rel:+.0f} % {label}"}


def unavailable(flag: str, quantity: str, why: str) -> dict:
    """An alternative the run cannot take (e.g. a stack that does not train at the run's
    precision): said, not compared."""
    return {"flag": flag, "quantity": quantity, "relative_change": None,
            "text": f"with {flag}: {why}"}


def alternatives_line(alternatives: list[dict]) -> str:
    """'with --stack torchtitan-fsdp2: +35 % GPU-hours; with --site-class site (PUE 1.58):
    +44 % energy'."""
    return "; ".join(a["text"] for a in alternatives)
