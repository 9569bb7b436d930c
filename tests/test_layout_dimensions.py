"""The layout's dimensions are declared once (planner.engine.inputs.layout_rules.DIMENSIONS) and
every list of them is read from that declaration (issue 28)."""

from __future__ import annotations

import dataclasses
import inspect
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from planner.cli.layout_options import LAYOUT_OPTIONS
from planner.codegen.command_signatures import dimension_parameter
from planner.engine.inputs.defaults import PREFERRED_LAYOUT
from planner.engine.inputs.glossary import GLOSSARY
from planner.engine.inputs.layout_rules import (
    CHOSEN_SIZES,
    DIMENSIONS,
    KERNEL_DIMENSIONS,
    Dimension,
    option_help,
)
from planner.engine.layouts import space
from planner.engine.run.columns import LEADING, layout_columns
from planner.engine.search import native_search

ROOT = Path(__file__).resolve().parents[1]


def test_the_layout_columns_are_the_dimensions_in_order():
    assert layout_columns() == tuple(d.name for d in DIMENSIONS)
    leading = {c.name: c for c in LEADING}
    for d in DIMENSIONS:
        assert leading[d.name].label == d.label
        assert leading[d.name].dtype == d.dtype
        assert leading[d.name].plan == d.plan


def test_every_dimension_with_an_option_is_an_option_of_a_one_layout_command():
    with_option = [d.name for d in DIMENSIONS if d.option]
    assert with_option and set(with_option) <= set(LAYOUT_OPTIONS)
    # in the declaration's order
    positions = [LAYOUT_OPTIONS.index(n) for n in with_option]
    assert positions == sorted(positions)
    assert "dp" not in LAYOUT_OPTIONS  # dp follows from the GPU count and the other sizes


def test_the_preferred_layout_and_the_chosen_sizes_come_from_the_declaration():
    assert PREFERRED_LAYOUT == {"tp": 8, "pp": 4, "cp": 1, "ep": 1, "vp": 1, "micro_batch": 1}
    assert CHOSEN_SIZES == ("tp", "pp", "cp", "ep", "vp", "micro_batch", "etp")
    assert next(d for d in DIMENSIONS if d.name == "tp").preferred == 8


def test_every_kernel_dimension_is_a_run_model_input_and_a_buffer_of_the_compiled_search():
    for name in KERNEL_DIMENSIONS:
        assert name in GLOSSARY, name
        assert name in native_search.BUFFERS, name
    # every layout column has a buffer the generated decoder writes
    source = (ROOT / "planner/engine/run/_native_generated.c").read_text()
    for name in layout_columns():
        buffer = native_search.buffer_of(name)
        assert buffer in native_search.BUFFER_NAMES
        assert f"b_{buffer}[i] = " in source, name


def test_a_new_dimension_gets_its_option_from_its_declaration():
    d = Dimension("xp", "x-parallel size", preferred=2, option="X-parallel size")
    # the parameter python -m planner.codegen writes into each one-layout command
    import typer

    parameter = dimension_parameter(d)
    namespace = {"typer": typer}
    source = f"def command(\n{parameter},\n): pass"  # the generated source, run alone
    exec(compile(source, "<generated>", "exec", dont_inherit=True), namespace)
    option = inspect.signature(namespace["command"]).parameters["xp"]
    assert option.annotation is int
    assert option.default.default is None  # left out: chosen
    assert option.default.help == "X-parallel size (left out: searched)."
    assert d.flag == "--xp"
    switch = dimension_parameter(Dimension("yp", "y", dtype="bool", option="Y."))
    assert '"--yp/--no-yp"' in switch
    assert option_help(Dimension("zp", "z", option="Z.")) == "Z."


def test_unpacking_the_search_codes_gives_the_packed_columns():
    rows = SimpleNamespace(
        ep_etp=np.array([8 * space.EXPERT_RADIX + 4, 1 * space.EXPERT_RADIX + 1]),
        recompute=np.array([0, 2]), zero_hsdp=np.array([2 * 3 + 1, 2 * 1 + 0]),
        sequence_parallel=np.array([1, 0]), domain_dp=np.array([2, 1]),
        dp=np.array([16, 8]))
    out = space.unpacked(rows, space.CODES)
    assert out["ep"].tolist() == [8, 1] and out["etp"].tolist() == [4, 1]
    assert out["zero"].tolist() == [3, 1]
    assert out["shard_group"].tolist() == [2, 8]  # HSDP: the domain's DP ranks
    assert out["recompute"].tolist() == [0, 2]
    assert out["sequence_parallel"].tolist() == [1, 0]


def test_the_declaration_loads_without_numpy():
    # the command line builds its options from it before any engine import
    probe = ("import sys\nimport planner.engine.inputs.layout_rules\nimport planner.engine.inputs.defaults\n"
             "print('numpy' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_the_hsdp_rules_are_layout_rules_read_by_the_checks_and_the_search():
    # the shard group's rules were written three times (check_shard_group, its vectorised
    # copy, the search's ZeRO x HSDP mask); now once, in VALIDITY
    from planner.engine.inputs.layout_rules import VALIDITY
    from planner.engine.layouts.layout_check import check_shard_group, check_shard_groups
    from planner.errors import CapplanError

    assert sum("shard_group" in rule.reads for rule in VALIDITY) == 2
    check_shard_group(8, 8, 0)  # no HSDP: any ZeRO stage
    check_shard_group(8, 2, 1)
    with pytest.raises(CapplanError, match="needs --zero 1, 2 or 3"):
        check_shard_group(8, 2, 0)
    with pytest.raises(CapplanError, match="must divide the data-parallel size 8"):
        check_shard_group(8, 3, 2)
    with pytest.raises(CapplanError, match="--shard-group 16 must divide"):
        check_shard_groups({"dp": np.array([8, 8]), "shard_group": np.array([4, 16]),
                            "zero": np.array([2, 2])})
    # the search's HSDP layouts obey them: the shard group divides DP, under ZeRO-2/3
    layout = space.enumerate_layouts(layers=32, heads=32, kv_heads=8, seq_len=4096,
                                     experts=1, global_batch=512, gpus_per_node=8,
                                     scale_up_domain=8,
                                     options=space.SpaceOptions(max_gpus=128))
    hsdp = layout["shard_group"] != layout["dp"]
    assert hsdp.any()
    assert (layout["dp"][hsdp] % layout["shard_group"][hsdp] == 0).all()
    assert (layout["zero"][hsdp] >= 2).all()


def test_the_glossary_lines_and_domains_of_the_layout_come_from_the_declaration():
    from planner.engine.inputs.domains import OPTION_DOMAINS, check
    from planner.engine.inputs.glossary import FLAG, GPU_COUNT, MAX_GLOBAL_BATCH, dimension_domain
    from planner.errors import CapplanError

    for d in DIMENSIONS:
        if d.kernel:
            term = GLOSSARY[d.name]
            assert term.meaning == (d.meaning or d.label) and term.unit == "1"
            assert term.domain == dimension_domain(d)
        elif d.dtype != "str":
            assert OPTION_DOMAINS[d.name] == dimension_domain(d)
    assert GLOSSARY["tp"].domain == GPU_COUNT
    assert GLOSSARY["sequence_parallel"].domain == FLAG
    assert GLOSSARY["micro_batch"].domain.maximum == MAX_GLOBAL_BATCH
    # the kernel reads the layout's inputs in the declaration's order
    inputs = list(GLOSSARY)
    positions = [inputs.index(n) for n in KERNEL_DIMENSIONS]
    assert positions == list(range(positions[0], positions[0] + len(positions)))
    with pytest.raises(CapplanError, match="--zero must be an integer >= 0 and <= 3, got 4"):
        check({"zero": 4})
    # a new size gets its domain from its declaration
    assert dimension_domain(Dimension("xp", "x", smallest=2, largest=64)).ok([2, 64]).all()
    assert not dimension_domain(Dimension("xp", "x", smallest=2, largest=64)).ok([1, 65]).any()


def test_evaluate_takes_the_layout_keywords_of_the_declaration():
    import inspect

    from planner.engine.inputs.defaults import DEFAULTS
    from planner.engine.layouts.evaluator import LayoutRequest, evaluate, layout_request

    given = [d for d in DIMENSIONS if d.given]
    # the generated dataclass, read from its source: typed fields, the declared defaults
    parameters = inspect.signature(LayoutRequest).parameters
    for d in given:
        assert parameters[d.name].default == d.default
        assert "ArrayLike" in parameters[d.name].annotation or d.dtype == "str"
    assert "dp" not in parameters
    names = [f.name for f in dataclasses.fields(LayoutRequest)]
    assert names == [d.name for d in given] + ["flash_attention"]
    request = LayoutRequest()
    # recompute None: chosen per run; zero None: the stack's
    assert (request.gpus, request.recompute, request.zero) == (DEFAULTS["gpus"], None, None)
    assert request.tp is None and request.shard_group is None
    # a misspelt keyword is Python's TypeError, with the nearest names
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'tpp'; did you mean: tp"):
        evaluate(model="llama2-7b", tpp=2)
    with pytest.raises(TypeError, match=r"'modle'; did you mean: model"):
        evaluate(modle="llama2-7b")
    assert layout_request({"tp": 2, "tokens": 1e12}) == LayoutRequest(tp=2)


def test_evaluate_with_layout_keywords_gives_the_layout_asked_for():
    from planner.engine.layouts.evaluator import evaluate

    r = evaluate(model="llama2-7b", hardware="h100-sxm", gpus=64, tp=2, pp=2, cp=1,
                 global_batch=512, micro_batch=2, zero=2, recompute="full",
                 tokens=2e12, as_frame=False)
    assert (r["tp"], r["pp"], r["dp"], r["micro_batch"], r["zero"], r["recompute"]) == (
        2, 2, 16, 2, 2, "full")


def test_space_options_are_a_plain_dataclass_with_the_declared_sizes():
    """SpaceOptions: the sizes the search builds, then one field per declared dimension
    (DeclaredSizes, generated from DIMENSIONS) defaulting to its declared sizes."""
    import dataclasses

    from planner.engine.layouts._layout_generated import DeclaredSizes
    from planner.engine.layouts.space import DECLARED_COLUMNS, SpaceOptions, declared_sizes

    assert issubclass(SpaceOptions, DeclaredSizes)
    assert tuple(f.name for f in dataclasses.fields(DeclaredSizes)) == DECLARED_COLUMNS
    assert {k: getattr(SpaceOptions(), k) for k in DECLARED_COLUMNS} == declared_sizes()
    assert SpaceOptions(max_gpus=64).max_gpus == 64 and SpaceOptions().tp is None
