"""A model read from a Hugging Face config.json (hardware_catalog.hf_config): the shapes of
the catalog's own entries from their published configs, and one line for a bad file."""

from __future__ import annotations

import json

import pytest

from hardware_catalog import CatalogError, load_catalog
from planner import evaluate
from tests.test_bad_files_and_values import one_line_usage_error, run_cli

#: config.json of each model as huggingface.co publishes it (the keys capplan reads, and
#: some it does not), for the catalog entry of the same id
CONFIGS = {
    "llama3.1-8b": {
        "architectures": ["LlamaForCausalLM"], "hidden_act": "silu", "hidden_size": 4096,
        "intermediate_size": 14336, "max_position_embeddings": 131072, "model_type": "llama",
        "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
        "rope_scaling": {"factor": 8.0, "original_max_position_embeddings": 8192,
                         "rope_type": "llama3"},
        "tie_word_embeddings": False, "vocab_size": 128256, "attention_dropout": 0.0},
    "mixtral-8x7b": {
        "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 14336,
        "max_position_embeddings": 32768, "model_type": "mixtral", "num_attention_heads": 32,
        "num_experts_per_tok": 2, "num_hidden_layers": 32, "num_key_value_heads": 8,
        "num_local_experts": 8, "sliding_window": None, "tie_word_embeddings": False,
        "vocab_size": 32000},
    "deepseek-v3": {
        "hidden_act": "silu", "hidden_size": 7168, "intermediate_size": 18432,
        "moe_intermediate_size": 2048, "num_hidden_layers": 61, "num_attention_heads": 128,
        "num_key_value_heads": 128, "n_routed_experts": 256, "n_shared_experts": 1,
        "num_experts_per_tok": 8, "first_k_dense_replace": 3, "n_group": 8, "topk_group": 4,
        "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128, "v_head_dim": 128, "vocab_size": 129280,
        "max_position_embeddings": 163840,
        "rope_scaling": {"factor": 40, "original_max_position_embeddings": 4096,
                         "type": "yarn"},
        "num_nextn_predict_layers": 1, "tie_word_embeddings": False,
        "model_type": "deepseek_v3"},
    "gpt-oss-120b": {
        "hidden_size": 2880, "intermediate_size": 2880, "num_hidden_layers": 36,
        "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64,
        "num_local_experts": 128, "num_experts_per_tok": 4, "vocab_size": 201088,
        "sliding_window": 128, "layer_types": ["sliding_attention", "full_attention"] * 18,
        "max_position_embeddings": 131072,
        "rope_scaling": {"factor": 32.0, "original_max_position_embeddings": 4096,
                         "rope_type": "yarn"},
        "tie_word_embeddings": False, "model_type": "gpt_oss"},
    "mistral-7b": {
        "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 14336,
        "max_position_embeddings": 32768, "model_type": "mistral", "num_attention_heads": 32,
        "num_hidden_layers": 32, "num_key_value_heads": 8, "sliding_window": 4096,
        "tie_word_embeddings": False, "vocab_size": 32000},
    "gpt2-small": {
        "model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024,
        "vocab_size": 50257, "activation_function": "gelu_new", "resid_pdrop": 0.1,
        "embd_pdrop": 0.1, "attn_pdrop": 0.1},
}
#: ModelSpec fields that are not the model's shape
NOT_SHAPE = {"kind", "schema_version", "id", "name", "source", "as_of", "aliases",
             "params_published", "params_rounding", "active_params_published"}


def write(tmp_path, config, name="config.json", folder="Some-Model"):
    path = tmp_path / folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config) if not isinstance(config, str) else config)
    return str(path)


@pytest.mark.parametrize("model_id", sorted(CONFIGS))
def test_a_published_config_gives_the_catalog_entrys_shape(model_id, tmp_path):
    catalog = load_catalog()
    read = catalog.model(write(tmp_path, CONFIGS[model_id], folder=model_id))
    entry = catalog.model(model_id)
    differ = {f: (getattr(read, f), getattr(entry, f)) for f in type(entry).model_fields
              if f not in NOT_SHAPE and getattr(read, f) != getattr(entry, f)}
    # the config's context is the RoPE's original length where scaled, else its maximum;
    # Mistral 7B's 32,768 against the 8,192 it was trained at
    assert differ == ({"seq_len": (32768, 8192)} if model_id == "mistral-7b" else {})


def test_a_config_evaluates_as_the_catalog_entry(tmp_path):
    path = write(tmp_path, CONFIGS["deepseek-v3"], folder="DeepSeek-V3")
    run = dict(hardware="h100-sxm", gpus=256, global_batch=1024, tp=2, pp=8, cp=1, ep=16,
               micro_batch=1, reliability="benchmark", as_frame=False)
    assert evaluate(model=path, **run)["step_time_s"] == \
        evaluate(model="deepseek-v3", **run)["step_time_s"]


def test_the_cli_takes_a_config_and_names_it_by_its_folder(tmp_path, capsys):
    path = write(tmp_path, CONFIGS["llama3.1-8b"], folder="Llama-3.1-8B")
    code, out, err = run_cli(capsys, "evaluate", "-m", path, "-H", "h100", "-n", "8",
                             "--global-batch", "32", "-f", "json")
    assert code == 0, err
    assert load_catalog().model(path).id == "llama-3.1-8b"


def test_a_multimodal_config_is_read_from_its_text_config(tmp_path):
    config = {"model_type": "llama4", "text_config": {**CONFIGS["llama3.1-8b"],
                                                       "model_type": "llama4_text"}}
    read = load_catalog().model(write(tmp_path, config))
    assert (read.layers, read.hidden, read.kv_heads) == (32, 4096, 8)


@pytest.mark.parametrize("text, says", [
    ("{", "invalid JSON"),
    ("[1, 2]", "expected a Hugging Face config.json object"),
    ('{"hidden_size": NaN}', "invalid JSON"),
    ('{"model_type": "llama"}', "no num_hidden_layers"),
    (json.dumps({**CONFIGS["llama3.1-8b"], "hidden_size": "4096"}),
     "hidden_size: expected a whole number >= 1"),
    (json.dumps({**CONFIGS["llama3.1-8b"], "hidden_size": 4096.5}),
     "hidden_size: expected a whole number"),
    (json.dumps({**CONFIGS["llama3.1-8b"], "num_hidden_layers": -2}),
     "num_hidden_layers: expected a whole number >= 1"),
    (json.dumps({**CONFIGS["llama3.1-8b"], "vocab_size": 1e300}),
     "vocab_size: expected a whole number"),
    (json.dumps({**CONFIGS["llama3.1-8b"], "tie_word_embeddings": "no"}),
     "tie_word_embeddings: expected true or false"),
    (json.dumps({**CONFIGS["llama3.1-8b"],
                 "layer_types": ["linear_attention", "full_attention"] * 16}),
     "'linear_attention' layers are not attention"),
    (json.dumps({**CONFIGS["llama3.1-8b"], "layer_types": ["full_attention"]}),
     "layer_types: expected one name a layer (32 layers)"),
    (json.dumps({**CONFIGS["llama3.1-8b"], "attn_logit_softcapping": -50.0}),
     "attn_logit_softcapping: expected a number > 0, 0 or null (no soft cap)"),
    (json.dumps({**CONFIGS["llama3.1-8b"], "attn_logit_softcapping": "50"}),
     "attn_logit_softcapping: expected a number > 0, 0 or null (no soft cap)"),
])
def test_a_bad_config_gets_one_line(text, says, tmp_path, capsys):
    path = write(tmp_path, text)
    with pytest.raises(CatalogError, match=says.replace("(", r"\(").replace(")", r"\)")):
        load_catalog().model(path)
    code, _, err = run_cli(capsys, "evaluate", "-m", path, "-H", "h100", "-n", "8")
    one_line_usage_error(code, err, "config.json")


def test_a_json_file_is_a_model_config_only(tmp_path, capsys):
    path = write(tmp_path, CONFIGS["llama3.1-8b"], name="h100.json")
    code, _, err = run_cli(capsys, "evaluate", "-H", path, "-n", "8")
    one_line_usage_error(code, err, "a JSON file is read as a Hugging Face model config")


#: google/gemma-2-9b config.json (the keys capplan reads and some it does not)
GEMMA2_9B = {
    "architectures": ["Gemma2ForCausalLM"], "attn_logit_softcapping": 50.0,
    "final_logit_softcapping": 30.0, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
    "hidden_size": 3584, "intermediate_size": 14336, "max_position_embeddings": 8192,
    "model_type": "gemma2", "num_attention_heads": 16, "num_hidden_layers": 42,
    "num_key_value_heads": 8, "query_pre_attn_scalar": 256, "sliding_window": 4096,
    "vocab_size": 256000}


def test_soft_capped_attention_logits_are_read_from_the_config(tmp_path):
    catalog = load_catalog()
    gemma = catalog.model(write(tmp_path, GEMMA2_9B, folder="gemma-2-9b"))
    assert gemma.attention_softcap == catalog.model("gemma2-9b").attention_softcap == 50.0
    # null (Gemma 3) and 0 mean no cap; a config without the key has none
    for off in (None, 0, 0.0):
        read = catalog.model(write(tmp_path, {**GEMMA2_9B, "attn_logit_softcapping": off},
                                   folder=f"off-{off}"))
        assert read.attention_softcap is None
    assert catalog.model(write(tmp_path, CONFIGS["llama3.1-8b"], folder="l")).attention_softcap \
        is None
