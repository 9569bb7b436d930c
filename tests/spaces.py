"""Kernel inputs of a real layout space, for the tests that evaluate whole spaces."""

from planner.engine.layouts.space import SpaceOptions, enumerate_layouts, layout_flags
from planner.engine.run.run_inputs import RunChoices, base_inputs


def space_inputs(catalog, model, hardware, *, tokens=15e12, **options):
    """The run-model inputs of every layout the search enumerates for ``model`` on
    ``hardware`` (``options``: :class:`SpaceOptions` fields)."""
    x = base_inputs(catalog, RunChoices(model=model, hardware=hardware, tokens=tokens))
    layout = enumerate_layouts(
        layers=int(x["layers"]), heads=int(x["heads"]), kv_heads=int(x["kv_heads"]),
        seq_len=int(x["seq_len"]), experts=int(x["experts"]),
        global_batch=int(x["global_batch"]), gpus_per_node=int(x["gpus_per_node"]),
        scale_up_domain=int(x["scale_up_domain_gpus"]), options=SpaceOptions(**options))
    return {**x, **layout_flags(layout, scale_up_domain=x["scale_up_domain_gpus"],
                                layers=x["layers"])}
