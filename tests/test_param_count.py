"""One parameter count: `catalog show`, `evaluate` and the Excel export agree, and match
the released checkpoints.

The count is :func:`planner.engine.run.model.param_counts` (the registered formula
``formulas.compute.model_params``).  Before, the catalog (``ModelSpec.param_count``)
and the kernel counted separately: the kernel left out the final norm (h, e.g. 8,192 for
Llama 3 70B) and the catalog counted DeepSeek-V3's MLA projections, which the kernel
models as multi-head attention (+1.12 B).
"""

import json

import numpy as np
import pytest

from hardware_catalog import load_catalog
from planner.cli.main import main
from planner.engine.inputs.scenario import model_inputs
from planner.engine.layouts.evaluator import evaluate

CATALOG = load_catalog()
MODELS = sorted(CATALOG.models)

#: Parameter counts of the released checkpoints (sum of the tensor sizes in the
#: safetensors files on Hugging Face), where the catalog's shapes describe them fully.
RELEASED = {
    "llama2-7b": 6_738_415_616,         # meta-llama/Llama-2-7b-hf
    "llama2-13b": 13_015_864_320,       # meta-llama/Llama-2-13b-hf
    "llama2-70b": 68_976_648_192,       # meta-llama/Llama-2-70b-hf
    "llama3-8b": 8_030_261_248,         # meta-llama/Meta-Llama-3-8B
    "llama3-70b": 70_553_706_496,       # meta-llama/Meta-Llama-3-70B
    "llama3.1-405b": 405_853_388_800,   # meta-llama/Llama-3.1-405B
    "llama3.2-1b": 1_235_814_400,       # meta-llama/Llama-3.2-1B (tied embeddings)
    "tinyllama-1.1b": 1_100_048_384,    # TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T
    "mixtral-8x7b": 46_702_792_704,     # mistralai/Mixtral-8x7B-v0.1
}


@pytest.fixture(scope="module")
def catalog_counts():
    """`capplan catalog show ID -f json`: the catalog's counts of every model."""
    import contextlib
    import io

    counts = {}
    for model_id in MODELS:
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            assert main(["catalog", "show", model_id, "--kind", "model", "-f", "json"]) == 0
        derived = json.loads(buffer.getvalue())["derived"]
        counts[model_id] = (derived["param_count"], derived["active_param_count"],
                            derived["mtp_param_count"])
    return counts


def _evaluated(model_id):
    frame = evaluate(model=model_id, hardware="h100-sxm", gpus=8, tp=1, pp=1, micro_batch=1,
                     catalog=CATALOG)
    return float(frame.loc[0, "params"]), float(frame.loc[0, "active_params"])


def test_count_depends_on_the_model_only():
    """The run model's params and active_params (its parameters stage calls param_counts)
    are functions of the model's shape only: no layout, hardware or run input in them."""
    from planner.engine.run.model import param_counts
    from planner.engine.run.symbolic import symbols

    counts = param_counts(symbols())
    model_names = set(model_inputs(CATALOG.model("llama3-70b")))
    for name in ("params", "active_params"):
        free = {str(s) for s in counts[name].free_symbols}
        assert free and free <= model_names, (name, free - model_names)


@pytest.mark.parametrize("model_id", MODELS)
def test_catalog_and_evaluate_agree(model_id, catalog_counts):
    assert catalog_counts[model_id][:2] == _evaluated(model_id)


@pytest.fixture(scope="module")
def workbook_counts(tmp_path_factory):
    """(params, active_params) of every catalog model as the exported workbook's Model
    sheet computes them: one ``capplan export xlsx``, its formulas evaluated by pycel
    with each model's inputs typed into the Inputs sheet."""
    openpyxl = pytest.importorskip("openpyxl")
    pycel = pytest.importorskip("pycel")
    path = tmp_path_factory.mktemp("xlsx") / "model.xlsx"
    assert main(["export", "xlsx", "--model", "llama3-70b", "--hardware", "h100-sxm",
                 "--gpus", "64", "--tp", "8", "-o", str(path)]) == 0
    book = openpyxl.load_workbook(path)
    inputs = {r[0].value: f"Inputs!B{r[0].row}" for r in book["Inputs"].iter_rows(min_row=3)}
    outputs = {r[0].value: f"Model!B{r[0].row}" for r in book["Model"].iter_rows() if r[0].value}
    compiler = pycel.ExcelCompiler(filename=str(path))
    # pycel 1.0b30 reads defined names through openpyxl < 3.1's API
    names = compiler.excel.workbook.defined_names
    names.definedName = list(names.values())
    counts = {}
    for model_id in MODELS:
        for name, value in model_inputs(CATALOG.model(model_id)).items():
            compiler.evaluate(inputs[name])  # into pycel's cell map, then changed
            compiler.set_value(inputs[name], float(value))
        counts[model_id] = tuple(float(compiler.evaluate(outputs[name]))
                                 for name in ("params", "active_params"))
    return counts


@pytest.mark.parametrize("model_id", MODELS)
def test_catalog_evaluate_and_excel_agree(model_id, catalog_counts, workbook_counts):
    assert catalog_counts[model_id][:2] == _evaluated(model_id) == workbook_counts[model_id]


def test_the_workbook_counts_move_with_the_model(workbook_counts, catalog_counts):
    # the Excel side is computed from each model's inputs, not one answer for all: as
    # many distinct counts as the catalog has distinct shapes (a release with its
    # predecessor's shape, Llama 3.1 8B as Llama 3 8B, counts the same)
    shapes = {counts[:2] for counts in catalog_counts.values()}
    assert len(set(workbook_counts.values())) == len(shapes) > len(MODELS) / 2
    assert workbook_counts["llama3.1-8b"] == workbook_counts["llama3-8b"]
    dense, moe = workbook_counts["llama3-70b"], workbook_counts["mixtral-8x7b"]
    assert dense[0] == dense[1] and moe[1] < moe[0] / 3


@pytest.mark.parametrize("model_id", sorted(RELEASED))
def test_count_equals_the_released_checkpoint(model_id, catalog_counts):
    assert model_id in CATALOG.models
    assert catalog_counts[model_id][0] == RELEASED[model_id]


@pytest.mark.parametrize("model_id", MODELS)
def test_count_within_two_percent_of_the_published_figure(model_id, catalog_counts):
    """Published figures (params_published) within 2 % plus half their rounding step.

    What the count leaves out: biases and learned position embeddings (GPT-2: 124.4 M
    with them, 123.55 M without; GPT-3, OPT, BLOOM, Megatron: < 0.3 %).  The published
    figures leave out multi-token-prediction modules (DeepSeek-V3's 671 B), which the
    count reports apart (``mtp_param_count``).
    """
    model = CATALOG.model(model_id)
    published = model.params_published.value
    total = catalog_counts[model_id][0] - catalog_counts[model_id][2]
    assert abs(total - published) <= 0.02 * published + model.params_rounding / 2


def test_excel_workbook_shows_the_same_count(tmp_path, catalog_counts):
    pytest.importorskip("openpyxl")
    import openpyxl

    path = tmp_path / "plan.xlsx"
    assert main(["export", "xlsx", "--model", "llama3-70b", "--hardware", "h100-sxm",
                 "--gpus", "64", "--tp", "8", "-o", str(path)]) == 0
    rows = {r[0]: r for r in openpyxl.load_workbook(path)["Model"].iter_rows(values_only=True)
            if r[0]}
    assert rows["params"][3] == catalog_counts["llama3-70b"][0] == RELEASED["llama3-70b"]
    assert np.isclose(rows["active_params"][3], catalog_counts["llama3-70b"][1], rtol=0)
