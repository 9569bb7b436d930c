"""A model entry read from a Hugging Face ``config.json`` (``--model path/config.json``).

The shapes a transformer's ``config.json`` states are the shapes a catalog model holds:
``hidden_size``, ``num_hidden_layers``, ``num_attention_heads``, ``num_key_value_heads``,
``intermediate_size``, ``vocab_size``, ``head_dim``, the experts (``num_local_experts``,
``n_routed_experts``, ``num_experts``; ``num_experts_per_tok``; ``moe_intermediate_size``),
DeepSeek's latent attention ranks, sliding windows and their ``layer_types``. This module
maps those keys onto the model schema's (hardware_catalog/schema.py ``ModelSpec``) and
leaves the checks to it, so a config file gets the same one-line errors as a model TOML.

Keys follow transformers' configuration classes (huggingface/transformers
``models/*/configuration_*.py``): LlamaConfig, MistralConfig, MixtralConfig, Qwen2/3(MoE)Config,
DeepseekV3Config, GptOssConfig, Gemma2Config; GPT-2 style names (``n_embd``, ``n_layer``,
``n_head``, ``n_inner``) are read as their aliases. A hybrid Mamba-Transformer's
``hybrid_override_pattern`` (NemotronHConfig: one character a block, ``M`` Mamba-2, ``*``
attention, ``-`` MLP, ``E`` MoE) gives its Mamba, mixer-free and MLP-free layers, with
``mamba_num_heads``, ``mamba_head_dim``, ``ssm_state_size`` and ``n_groups``, and LatentMoE's ``moe_latent_size``. Other
layers that are not attention (gated delta-rule ``layer_types``) are refused: their shapes
need a model TOML.
"""

from __future__ import annotations

import json
import math
import re

from .errors import CatalogError

#: model_type values whose MLP is gated (SwiGLU / GeGLU: three matrices a layer).
GATED_TYPES = frozenset({
    "llama", "llama4", "llama4_text", "mistral", "mixtral", "qwen", "qwen2", "qwen2_moe",
    "qwen3", "qwen3_moe", "gemma", "gemma2", "gemma3", "gemma3_text", "deepseek_v2",
    "deepseek_v3", "phi3", "olmo", "olmo2", "olmoe", "granite", "granitemoe", "internlm2",
    "gpt_oss", "cohere", "cohere2", "glm", "glm4", "glm4_moe", "ernie4_5", "ernie4_5_moe",
    "dots1", "smollm3"})
#: model_type values that tie the output layer to the embedding when config.json is silent
#: (transformers' PretrainedConfig default is tied; the Llama-family classes default untied).
TIED_BY_DEFAULT = frozenset({"gpt2", "opt", "bloom", "gemma", "gemma2", "gemma3",
                             "gemma3_text", "gpt_bigcode", "falcon"})
#: Dropout probabilities a config states (GPT-2's *_pdrop, the Llama family's
#: attention_dropout); any above 0 means the model trains with dropout masks.
DROPOUT_KEYS = ("resid_pdrop", "embd_pdrop", "attn_pdrop", "attention_dropout",
                "hidden_dropout", "hidden_dropout_prob", "dropout")
#: Layer kinds that are attention, as ``layer_types`` names them.
FULL, SLIDING = "full_attention", "sliding_attention"


def model_data(text: str, shown: str, stem: str) -> dict:
    """The model entry's keys for a ``config.json``'s text (``shown``: the path as the
    error line names it; ``stem``: the id when the config names no model)."""
    try:
        config = json.loads(text, parse_constant=_no_constant)
    except (json.JSONDecodeError, ValueError) as exc:
        raise CatalogError(f"{shown}: invalid JSON: {exc}") from None
    except RecursionError:
        raise CatalogError(f"{shown}: invalid JSON: nested too deeply for a model config") \
            from None
    if not isinstance(config, dict):
        raise CatalogError(f"{shown}: expected a Hugging Face config.json object "
                           f"(hidden_size, num_hidden_layers, ...), got a JSON "
                           f"{type(config).__name__}")
    # multimodal configs keep the language model's keys under text_config (Llama 4, Gemma 3)
    if isinstance(config.get("text_config"), dict) and "hidden_size" not in config:
        config = {**config["text_config"], "_name_or_path": config.get("_name_or_path")}
    kind = str(config.get("model_type") or "")
    read = _Reader(config, shown)
    layers = read.whole("num_hidden_layers", "n_layer", "num_layers")
    hidden = read.whole("hidden_size", "n_embd", "d_model")
    heads = read.whole("num_attention_heads", "n_head")
    data = {
        "kind": "model", "layers": layers, "hidden": hidden, "heads": heads,
        "vocab": read.whole("vocab_size"),
        "kv_heads": read.whole("num_key_value_heads", "num_kv_heads", default=heads),
        "seq_len": _seq_len(read),
        "tied_embeddings": read.flag("tie_word_embeddings",
                                     default=kind in TIED_BY_DEFAULT),
        "gated_mlp": kind in GATED_TYPES or str(config.get("hidden_act", "")).lower() in (
            "silu", "swiglu", "geglu"),
    }
    layer_types = _layer_types(config, shown, layers)
    ffn = read.whole("intermediate_size", "n_inner", "ffn_dim", default=4 * hidden)
    # the first Qwen states both halves of its gated MLP in intermediate_size
    data["ffn"] = ffn // 2 if kind == "qwen" else ffn
    head_dim = read.whole("head_dim", default=None)
    if head_dim is not None and head_dim * heads != hidden:
        data["head_dim"] = head_dim
    data.update(_experts(read, ffn))
    latent = read.whole("moe_latent_size", default=None)  # LatentMoE (Nemotron 3 Super)
    if latent is not None:
        data["moe_latent_dim"] = latent
    data.update(_latent_attention(read))
    window = read.whole("sliding_window", default=None)
    sliding = layer_types.count(SLIDING) if layer_types else None
    if window is not None and (sliding or (sliding is None and config.get(
            "use_sliding_window", kind in ("mistral", "mixtral")))):
        data["sliding_window"] = window
        if sliding is not None and sliding < layers:  # default: every layer (Mistral 7B)
            data["sliding_window_layers"] = sliding
    # trained with dropout where any of its probabilities is above 0 (GPT-2's *_pdrop)
    data["dropout"] = any(isinstance(v := config.get(k), int | float) and not isinstance(
        v, bool) and v > 0 for k in DROPOUT_KEYS)
    if kind == "gpt_oss":  # learnable attention sinks in every layer (GptOssAttention.sinks)
        data["attention_sinks"] = True
    # attention logits soft-capped before the softmax (Gemma 2: Gemma2Config 50.0)
    if (softcap := read.cap("attn_logit_softcapping")) is not None:
        data["attention_softcap"] = softcap
    data.update(_hybrid_pattern(config, read, shown, layers))
    mtp = read.whole("num_nextn_predict_layers", default=0, minimum=0)
    if mtp:
        data["mtp_layers"] = mtp
    name = config.get("_name_or_path")
    name = name.rsplit("/", 1)[-1] if isinstance(name, str) and name.strip() else stem
    # an id as the catalog's: lower case, hyphens for what else separates words
    id_ = re.sub(r"[^a-z0-9._-]+", "-", name.lower())[:100].strip("-._") or "config"
    data.update({"id": id_, "name": name[:200],
                 "source": f"Hugging Face config.json {shown} (model_type "
                           f"{kind or 'not stated'})"})
    return data


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number a model config holds")


def _seq_len(read: _Reader) -> int:
    """The pre-training context: RoPE scaling's original length where the config extends
    it (Llama 3.1: 8,192 of 131,072), else max_position_embeddings (n_positions), else
    seq_length."""
    scaling = read.config.get("rope_scaling")
    if isinstance(scaling, dict) and scaling.get("original_max_position_embeddings"):
        return _Reader(scaling, read.shown).whole("original_max_position_embeddings")
    return read.whole("max_position_embeddings", "n_positions", "seq_length", "n_ctx")


def _layer_types(config: dict, shown: str, layers: int) -> list[str] | None:
    """``layer_types`` where stated: every layer full or sliding-window attention."""
    types = config.get("layer_types")
    if types is None:
        return None
    if not isinstance(types, list) or len(types) != layers or not all(
            isinstance(t, str) for t in types):
        raise CatalogError(f"{shown}: layer_types: expected one name a layer "
                           f"({layers} layers), got {_shown(types)}")
    other = sorted({t for t in types} - {FULL, SLIDING})
    if other:
        raise CatalogError(f"{shown}: layer_types: '{other[0]}' layers are not attention; "
                           f"a config.json gives capplan full_attention and "
                           f"sliding_attention layers only: write a model TOML for this "
                           f"architecture (docs/catalog.md)")
    return types


#: Block kinds of a hybrid_override_pattern (Megatron-Core's hybrid layer allocation).
HYBRID_BLOCKS = {"M": "Mamba-2", "*": "attention", "-": "MLP", "E": "MoE"}
#: Megatron-Core's other block kinds (hybrid_layer_allocation.Symbols), not read from a
#: config.json: their shapes need keys the NemotronH config does not have.
UNREAD_BLOCKS = {"G": "Gated DeltaNet", "D": "DeepSeek (MLA) attention"}


def _hybrid_pattern(config: dict, read: _Reader, shown: str, layers: int) -> dict:
    """The one-part blocks of a hybrid model's ``hybrid_override_pattern`` (none: {})."""
    pattern = config.get("hybrid_override_pattern")
    if pattern is None:
        return {}
    if not isinstance(pattern, str) or len(pattern) != layers:
        raise CatalogError(f"{shown}: hybrid_override_pattern: expected one character a "
                           f"layer ({layers}), got {_shown(pattern)}")
    other = sorted(set(pattern) - set(HYBRID_BLOCKS))
    if other:
        known = UNREAD_BLOCKS.get(other[0])
        kind = f"a {known} block, which a config.json does not describe here (write a " \
            "model TOML)" if known else "not a block kind"
        raise CatalogError(f"{shown}: hybrid_override_pattern: '{other[0]}' is {kind}; "
                           f"expected {', '.join(HYBRID_BLOCKS)} ("
                           f"{', '.join(HYBRID_BLOCKS.values())})")
    mamba = pattern.count("M")
    data = {"mixer_free_layers": pattern.count("-") + pattern.count("E"),
            "mlp_free_layers": mamba + pattern.count("*")}
    if "E" in pattern:  # the MLP blocks are the dense ones
        data["dense_layers"] = pattern.count("-")
    if mamba:
        data.update({"mamba_layers": mamba,
                     "mamba_heads": read.whole("mamba_num_heads"),
                     "mamba_head_dim": read.whole("mamba_head_dim"),
                     "mamba_state_dim": read.whole("ssm_state_size", "mamba_state_dim"),
                     "mamba_groups": read.whole("n_groups", "mamba_num_groups", default=1)})
    return data


def _experts(read: _Reader, ffn: int) -> dict:
    """The routed and shared experts: Mixtral's num_local_experts (each expert the dense
    intermediate_size), DeepSeek's n_routed_experts and n_shared_experts with their first
    dense layers, Qwen-MoE's num_experts and shared_expert_intermediate_size."""
    experts = read.whole("num_local_experts", "n_routed_experts", "num_experts",
                         default=0, minimum=0)
    if experts <= 1:
        return {}
    moe_ffn = read.whole("moe_intermediate_size", default=ffn)
    out = {"experts": experts, "experts_per_token": read.whole("num_experts_per_tok",
                                                               "top_k"),
           "moe_ffn": moe_ffn}
    shared = read.whole("n_shared_experts", default=0, minimum=0)
    shared_width = read.whole("shared_expert_intermediate_size", default=0, minimum=0)
    if shared_width:  # Qwen2-MoE: one shared expert of that width = its count in moe_ffn
        shared = max(shared, round(shared_width / moe_ffn))
    if shared:
        out["shared_experts"] = shared
    dense = read.whole("first_k_dense_replace", default=0, minimum=0)
    if dense:
        out["dense_layers"] = dense
    # node-limited routing: a token's experts in at most topk_group of n_group groups
    if read.whole("n_group", default=1) > 1:
        out["routed_node_limit"] = read.whole("topk_group")
    return out


def _latent_attention(read: _Reader) -> dict:
    """DeepSeek's multi-head latent attention ranks and head sizes, where stated."""
    keys = ("q_lora_rank", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim",
            "v_head_dim")
    if read.config.get("kv_lora_rank") is None:
        return {}
    return {k: v for k in keys if (v := read.whole(k, default=None)) is not None}


class _Reader:
    """Whole numbers and flags of a config by their names, each problem one line."""

    def __init__(self, config: dict, shown: str):
        self.config, self.shown = config, shown

    def whole(self, *names: str, default=..., minimum: int = 1):
        for name in names:
            value = self.config.get(name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or (
                    isinstance(value, float) and (not math.isfinite(value)
                                                  or not value.is_integer())) \
                    or value < minimum or value > 2**53:
                raise CatalogError(f"{self.shown}: {name}: expected a whole number >= "
                                   f"{minimum}, got {_shown(value)}")
            return int(value)
        if default is ...:
            also = f" (nor {', '.join(names[1:])})" if len(names) > 1 else ""
            raise CatalogError(f"{self.shown}: no {names[0]}{also}: not a Hugging Face "
                               f"causal-LM config.json")
        return default

    def cap(self, name: str):
        """A soft cap: a positive number, or None where the config leaves it out, null or
        0 (off)."""
        value = self.config.get(name)
        if value is None or (not isinstance(value, bool) and value == 0):
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) \
                or not math.isfinite(value) or value < 0:
            raise CatalogError(f"{self.shown}: {name}: expected a number > 0, 0 or null "
                               f"(no soft cap), got {_shown(value)}")
        return float(value)

    def flag(self, name: str, default: bool) -> bool:
        value = self.config.get(name, default)
        if not isinstance(value, bool):
            raise CatalogError(f"{self.shown}: {name}: expected true or false, "
                               f"got {_shown(value)}")
        return value


def _shown(value) -> str:
    text = json.dumps(value)[:60]
    return text.replace("\n", " ")
