"""Catalog names as users type them: ids in any case, with spaces or underscores, and the
accelerators' aliases ('H100', 'Trillium', 'TPU7x') resolve to the catalog id, which the
reports then print; a name two entries claim is refused when the catalog loads."""

import re

import pytest

from hardware_catalog import CatalogError, load_catalog
from hardware_catalog.loader import normalised_name
from planner.engine.layouts.evaluator import evaluate
from tests.test_bad_files_and_values import one_line_usage_error, run_cli


@pytest.mark.parametrize("typed, id_", [
    ("GB200", "gb200"), ("H100", "h100-sxm"), ("H100 SXM5", "h100-sxm"),
    ("h100_sxm", "h100-sxm"), ("Trillium", "tpu-v6e"), ("TPU7x", "tpu-v7"),
    ("Ironwood", "tpu-v7"), ("v5e", "tpu-v5e"), ("Gaudi 2", "gaudi2"), ("MI300X", "mi300x"),
    ("GB300-NVL72", "gb300"), ("B200-SXM-180GB", "b200"), ("  gh200 ", "gh200"),
])
def test_accelerator_names_resolve_to_the_id(typed, id_):
    assert load_catalog().accelerator(typed).id == id_


def test_models_and_stacks_ignore_case_too():
    cat = load_catalog()
    assert cat.model("Llama3.1-8B").id == "llama3.1-8b"
    assert cat.stack("MaxText-XLA").id == "maxtext-xla"


@pytest.mark.parametrize("kind", ["accelerators", "models", "stacks"])
def test_every_alias_is_normalised_and_names_one_entry(kind):
    entries = getattr(load_catalog(), kind)
    seen = {normalised_name(i): i for i in entries}
    for id_, entry in entries.items():
        for alias in entry.aliases:
            assert alias == normalised_name(alias), (id_, alias)
            assert seen.setdefault(alias, id_) == id_, (id_, alias)


@pytest.mark.parametrize("typed, id_", [
    ("MaxText", "maxtext-xla"), ("Megatron-Core", "megatron-core-2025"),
    ("Megatron-LM", "megatron-core-2025"), ("NeMo", "megatron-core-2025"),
    ("Megatron-Bridge", "megatron-bridge-2025"), ("torchtitan", "torchtitan-fsdp2"),
    ("DeepSpeed", "deepspeed-zero"), ("LLM Foundry", "llm-foundry-2023"),
    # with a release after the name, as benchmark tables state it
    ("megatron-bridge-25.11", "megatron-bridge-2025"), ("NeMo 25.09", "megatron-core-2025"),
    ("NeMo 2.0", "megatron-core-2025"), ("torchtitan v0.2", "torchtitan-fsdp2"),
    ("mcore-0.13.0", "megatron-core-2025"), ("Primus", "megatron-core-2025"),
    ("FSDP2", "torchtitan-fsdp2"),
])
def test_stacks_answer_to_their_frameworks_names(typed, id_, capsys):
    assert load_catalog().stack(typed).id == id_
    code, out, err = run_cli(capsys, "evaluate", "-m", "llama3.1-8b", "-H", "h100", "-n", "8",
                             "--global-batch", "8", "--stack", typed, "-f", "json")
    assert code == 0, err
    assert f'"stack": "{id_}"' in out


@pytest.mark.parametrize("typed, id_", [
    ("NVIDIA H100 80GB HBM3", "h100-sxm"), ("NVIDIA A100-SXM4-40GB", "a100-40gb"),
    ("AMD Instinct MI300X", "mi300x"), ("Google Cloud TPU v5p", "tpu-v5p"),
    ("Intel Gaudi 2", "gaudi2"), ("NVIDIA Tesla V100", "v100-32gb"), ("NVIDIA B200", "b200"),
    ("NVIDIA DGX H100", "h100-sxm"), ("HGX H200", "h200"), ("DGX GB200", "gb200"),
    # memory and slice words after the part (as submission tables and GKE name them)
    ("AMD Instinct MI300X 192GB HBM3", "mi300x"), ("AMD Instinct MI325X 256GB HBM3E", "mi325x"),
    ("A100 40GB HBM2", "a100-40gb"), ("A100 80GB HBM2e", "a100-80gb"),
    ("H100 PCIe 80GB", "h100-pcie"), ("tpu-v6e-256", "tpu-v6e"), ("v5p-128", "tpu-v5p"),
    ("tpu-v5-lite-podslice", "tpu-v5e"), ("tpu-v6e-slice", "tpu-v6e"), ("tpu-v7x", "tpu-v7"),
])
def test_accelerators_answer_to_their_vendors_full_names(typed, id_):
    # as nvidia-smi and the vendors' product pages print them: the vendor and product line
    # in front of the part
    assert load_catalog().accelerator(typed).id == id_


def test_a_vendor_alone_names_no_accelerator():
    with pytest.raises(CatalogError, match="unknown accelerator 'NVIDIA'"):
        load_catalog().accelerator("NVIDIA")


def test_a_stack_that_extends_another_does_not_take_its_aliases():
    cat = load_catalog()
    assert "torchtitan" in cat.stack("torchtitan-fsdp2").aliases
    assert cat.stack("torchtitan-fsdp2-2026").aliases == []


def test_ambiguous_names_stay_refused_with_their_candidates():
    # 'A100' is a 40 or an 80 GB part: no alias picks one
    with pytest.raises(CatalogError, match=r"did you mean: a100-40gb, a100-80gb"):
        load_catalog().accelerator("A100")
    with pytest.raises(CatalogError, match=r"did you mean: gb200"):
        load_catalog().accelerator("GB2000")


def test_an_alias_claimed_by_two_entries_is_refused(tmp_path):
    h100 = load_catalog().origin("accelerator", "h100-sxm").read_text()
    clash = re.sub(r"^aliases = .*$", 'aliases = ["trillium"]',
                   h100.replace('id = "h100-sxm"', 'id = "my-h100"'), flags=re.M)
    (tmp_path / "my-h100.toml").write_text(clash)
    with pytest.raises(CatalogError, match=r"'trillium' names two accelerators, my-h100 and tpu-v6e"):
        load_catalog((str(tmp_path),))


def test_the_cli_prints_the_id_of_a_name_typed_otherwise(capsys):
    code, out, err = run_cli(capsys, "evaluate", "-H", "GB200", "-m", "Llama3.1-8B", "-n", "8",
                             "--tp", "1", "--pp", "1", "--cp", "1", "--micro-batch", "1")
    assert code == 0, err
    assert "llama3.1-8b on 8 x gb200" in out and "GB200" not in out
    code, out, err = run_cli(capsys, "plan", "-H", "H100,Trillium", "-m", "llama3.1-8b",
                             "--max-gpus", "64", "--tokens", "1e11", "-f", "json")
    assert code == 0, err
    assert "H100" not in out and "Trillium" not in out and "h100-sxm" in out
    code, _, err = run_cli(capsys, "evaluate", "-H", "GB2000", "-n", "8")
    one_line_usage_error(code, err, "unknown accelerator 'GB2000'", "did you mean: gb200")


def test_the_api_resolves_names_as_the_cli_does():
    a = evaluate(model="Llama3.1-8B", hardware="H100", gpus=8, tp=1, pp=1, cp=1,
                 micro_batch=1, global_batch=8, as_frame=False)
    b = evaluate(model="llama3.1-8b", hardware="h100-sxm", gpus=8, tp=1, pp=1, cp=1,
                 micro_batch=1, global_batch=8, as_frame=False)
    assert a["step_time_s"] == b["step_time_s"]


def test_precision_and_recompute_choices_ignore_case(capsys):
    typed = run_cli(capsys, "evaluate", "-H", "h100-sxm", "-m", "llama3.1-8b", "-n", "8",
                    "--tp", "1", "--pp", "1", "--cp", "1", "--micro-batch", "1",
                    "--precision", "FP8", "--recompute", "Full")
    exact = run_cli(capsys, "evaluate", "-H", "h100-sxm", "-m", "llama3.1-8b", "-n", "8",
                    "--tp", "1", "--pp", "1", "--cp", "1", "--micro-batch", "1",
                    "--precision", "fp8", "--recompute", "full")
    assert typed[0] == 0 and typed[1] == exact[1]
    code, _, err = run_cli(capsys, "evaluate", "-n", "8", "--precision", "FP9")
    one_line_usage_error(code, err, "--precision 'fp9' is not one of", "did you mean: fp8")


def test_catalog_show_and_checkpoint_take_names_as_typed(capsys):
    code, out, err = run_cli(capsys, "catalog", "show", "GB200")
    assert code == 0, err
    assert "accelerator gb200" in out
    code, out, err = run_cli(capsys, "checkpoint", "-H", "Trillium", "-f", "json")
    assert code == 0, err
    assert '"hardware": "tpu-v6e"' in out and "Trillium" not in out


@pytest.mark.parametrize("typed, id_", [
    ("Llama-3.1-8B", "llama3.1-8b"), ("Meta-Llama-3-70B", "llama3-70b"),
    ("Llama-2-7b", "llama2-7b"), ("Mixtral-8x7B-v0.1", "mixtral-8x7b"),
    ("Llama-4-Maverick-17B-128E", "llama4-maverick"),
])
def test_models_answer_to_their_hugging_face_names(typed, id_):
    assert load_catalog().model(typed).id == id_


@pytest.mark.parametrize("typed, id_", [
    ("Llama-3.1-8B", "llama3.1-8b"), ("Llama 3.1 405B", "llama3.1-405b"),
    ("Llama-3-70B", "llama3-70b"), ("Grok-1-314B", "grok1-314b"), ("GPT-3 175B", "gpt3-175b"),
    ("Llama-2-70B", "llama2-70b"),
])
def test_model_names_as_model_cards_write_them_resolve(typed, id_):
    # hyphens aside, where that leaves one id or alias
    assert load_catalog().model(typed).id == id_


@pytest.mark.parametrize("typed, id_", [
    ("llama31_8b", "llama3.1-8b"), ("llama31_405b", "llama3.1-405b"),
    ("Llama3.1-70B", "llama3.1-70b"), ("Llama 3 405B", "llama3.1-405b"),
    ("Llama4-Maverick-400B(E128)", "llama4-maverick"), ("Llama 4 Scout (16E)", "llama4-scout"),
    ("DeepSeek-V3-671B", "deepseek-v3"), ("Grok-1", "grok1-314b"), ("GPT-3", "gpt3-175b"),
    ("Qwen-7B", "qwen-7b"), ("Qwen-14B", "qwen-14b"),
])
def test_benchmark_table_names_resolve(typed, id_):
    # dots aside too (Megatron-Bridge's llama31_405b), and a trailing qualifier in brackets
    assert load_catalog().model(typed).id == id_


@pytest.mark.parametrize("typed, id_", [
    ("meta-llama/Llama-3.1-8B", "llama3.1-8b"), ("Qwen/Qwen3-235B-A22B", "qwen3-235b-a22b"),
    ("deepseek-ai/DeepSeek-V3", "deepseek-v3"), ("openai/gpt-oss-120b", "gpt-oss-120b"),
    ("mistralai/Mixtral-8x7B-v0.1", "mixtral-8x7b"),
])
def test_hugging_face_repository_ids_name_the_model(typed, id_):
    catalog = load_catalog()
    assert catalog.model(typed).id == id_
    assert catalog.canonical("model", typed) == id_


def test_a_repository_id_that_names_no_model_is_a_missing_file(tmp_path, monkeypatch):
    catalog = load_catalog()
    with pytest.raises(CatalogError, match="no such file, nor a catalog model named 'model'; "
                       "for a Hugging Face model give the path of its config.json"):
        catalog.model("nosuch/model")
    # a file of that path is read as the file, not as the catalog's model
    source = catalog.origin("model", "llama3-8b").read_text()
    (tmp_path / "meta-llama").mkdir()
    (tmp_path / "meta-llama" / "Llama-3.1-8B").write_text(source)
    monkeypatch.chdir(tmp_path)
    assert catalog.model("meta-llama/Llama-3.1-8B").id == "llama3-8b"


def test_a_name_that_is_two_ids_without_hyphens_stays_refused(tmp_path):
    source = load_catalog().origin("model", "llama3-70b").read_text()
    copy = re.sub(r"^aliases = .*$", "", source.replace('id = "llama3-70b"',
                                                        'id = "l-lama3-70b"'), flags=re.M)
    (tmp_path / "l-370b.toml").write_text(copy)
    cat = load_catalog((str(tmp_path),))
    assert cat.model("llama3-70b").id == "llama3-70b"  # the exact id still resolves
    with pytest.raises(CatalogError, match="unknown model"):
        cat.model("Llama370B")  # 'llama370b' is both ids without their hyphens
