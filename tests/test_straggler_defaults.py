"""The two straggler models (the step-time model StragglerSpec, capplan stragglers'
WhatIf) and the run model's fault options share one name and one default per parameter
(issue 40: gc_pause_s was 0.0 in one and 1.0 in the other)."""

import inspect
import math
from dataclasses import fields

import pytest

from planner.analysis.simulate import StragglerSpec
from planner.analysis.stragglers import WhatIf
from planner.cli.fault_options import FAULT_DEFAULTS
from planner.cli.stragglers_command import stragglers
from planner.engine.inputs.defaults import STRAGGLERS


def _defaults(cls) -> dict:
    return {f.name: f.default for f in fields(cls)}


@pytest.mark.parametrize("name", STRAGGLERS)
def test_both_models_take_the_declared_default(name):
    value, source = STRAGGLERS[name]
    assert len(source) > 10
    spec, what = _defaults(StragglerSpec), _defaults(WhatIf)
    for got in (spec[name], what[name]):
        assert got == value or (math.isinf(value) and math.isinf(got)), name


def test_the_models_name_no_shared_parameter_apart():
    spec, what = set(_defaults(StragglerSpec)), set(_defaults(WhatIf))
    assert set(STRAGGLERS) <= spec & what
    # what only one model has is its own: the group size, the per-rank vs per-node share
    # of slow ones, planned GC and node size, the measured sequence factor
    assert spec - what == {"ranks", "slow_rank_fraction"}
    assert what - spec == {"gc_every_steps", "slow_node_fraction", "gpus_per_node",
                           "sequence_slowdown"}


def test_the_options_default_to_the_declaration():
    options = {k: p.default.default for k, p in inspect.signature(stragglers).parameters.items()
               if hasattr(p.default, "default")}
    options.update({k: p.default for k, p in inspect.signature(stragglers).parameters.items()
                    if not hasattr(p.default, "default")})
    for flag, name in (("step_time_cv", "step_time_cv"), ("stages", "stages"),
                       ("microbatches", "microbatches"), ("gc_pause", "gc_pause_s"),
                       ("slow_node_slowdown", "slow_node_slowdown")):
        assert options[flag] == STRAGGLERS[name][0], flag
    assert FAULT_DEFAULTS["gc_pause"] == STRAGGLERS["gc_pause_s"][0]
    assert FAULT_DEFAULTS["slow_node_slowdown"] == STRAGGLERS["slow_node_slowdown"][0]
