"""The training method of a run: pre-training, full SFT, LoRA, QLoRA or DPO.

:func:`method_spec` checks a method and its options (``--lora-rank``, ``--lora-targets``,
``--base-precision``, ``--packing``, ``--max-seq-len``, ``--reference-logprobs``) and
fills in each option's default for the method; :func:`method_inputs` turns the result
into run-model inputs (frozen base, adapter rank and targets, base bytes per weight,
dequantisation, reference model, share of real tokens).  Pre-training sets the inputs
of planner/engine/inputs/execution.toml, under which the run model is the pre-training model
result for result.  The formulas live in :mod:`formulas.finetune`; docs/post-training.md
explains the methods.
"""

from __future__ import annotations

from dataclasses import dataclass

from formulas.finetune import padded_token_efficiency, quantized_bytes_per_param
from planner.engine.inputs.defaults import (
    BASE_PRECISIONS,
    LORA_MATRICES,
    LORA_TARGET_GROUPS,
    METHODS,
    PACKINGS,
    REFERENCE_LOGPROBS,
)
from planner.engine.inputs.glossary import MAX_LORA_RANK
from planner.errors import CapplanError, choice_error, shown

#: Methods that train LoRA adapters on a frozen base.
LORA_METHODS = ("lora", "qlora")
#: Methods whose sequences vary in length (packed or padded).
VARIABLE_LENGTH_METHODS = ("sft", "dpo")
#: Rank of the adapters unless stated (Hu et al. 2021, arXiv:2106.09685, Table 6 tries
#: 1-64; 16 is Hugging Face PEFT's and torchtune's common choice).
DEFAULT_LORA_RANK = 16
#: All linear layers of each block: QLoRA (arXiv:2305.14314 s4, "LoRA on all linear
#: transformer block layers are required to match full finetuning performance").
DEFAULT_LORA_TARGETS = "all-linear"
#: QLoRA's NF4 base: 4-bit weights, FP8 constants per 64 weights, FP32 constants per 256
#: of those (double quantisation, arXiv:2305.14314 s3).
NF4_BITS, NF4_BLOCK, NF4_CONSTANT_BITS, NF4_SECOND_BLOCK, NF4_SECOND_BITS = 4, 64, 8, 256, 32
#: Bytes per frozen base weight by --base-precision (BF16 and FP8 store no constants of
#: note: one scale per tensor).
BASE_BYTES_PER_PARAM = {
    "bf16": 2.0, "fp8": 1.0,
    "nf4": float(quantized_bytes_per_param(NF4_BITS, NF4_BLOCK, NF4_CONSTANT_BITS,
                                           NF4_SECOND_BLOCK, NF4_SECOND_BITS)),
}


@dataclass(frozen=True)
class Method:
    """A checked training method with every option resolved (None: not used by it)."""

    name: str = "pretrain"
    lora_rank: int | None = None
    lora_targets: tuple[str, ...] = ()
    base_precision: str | None = None
    packing: str | None = None
    max_seq_len: int | None = None
    reference_logprobs: str | None = None

    def label(self) -> str:
        """One line naming the method and its options (for titles and notes)."""
        parts = [self.name]
        if self.lora_rank is not None:
            parts.append(f"rank {self.lora_rank} on {','.join(self.lora_targets)}, "
                         f"{self.base_precision} base")
        if self.packing is not None:
            parts.append(self.packing + (f" to {self.max_seq_len}" if self.max_seq_len else ""))
        if self.reference_logprobs is not None:
            parts.append(f"reference log-probs: {self.reference_logprobs}")
        return " ".join(parts[:1]) + (" (" + "; ".join(parts[1:]) + ")" if parts[1:] else "")


def not_yet_grpo() -> CapplanError:
    """The error of ``--method grpo`` where the RL rollout model is not hooked in: it runs in
    ``capplan evaluate`` and ``capplan plan`` (planner.cli.rl_run) and in Python through
    :mod:`planner.engine.layouts.rl`, not in the training kernel's commands."""
    return CapplanError("--method grpo runs in capplan evaluate and capplan plan (Python: "
                        "planner.engine.layouts.rl), not here; here use one of: pretrain, sft, lora, "
                        "qlora, dpo")


def _choice(flag: str, value, allowed) -> None:
    if value not in allowed:
        raise choice_error(flag, value, allowed)


def _only_for(flag: str, value, methods, name: str) -> None:
    if value is not None and name not in methods:
        raise CapplanError(f"--{flag} applies to --method {'|'.join(methods)}, not {name}")


def lora_targets(text) -> tuple[str, ...]:
    """The matrices of ``--lora-targets`` (comma-separated matrices or groups), in the
    order of :data:`LORA_MATRICES`; unknown names get a did-you-mean."""
    if not isinstance(text, str) or not text.strip():
        raise CapplanError(f"--lora-targets {shown(text)} is empty; give matrices or groups: "
                           f"{', '.join((*LORA_MATRICES, *LORA_TARGET_GROUPS))}")
    chosen = set()
    for name in (part.strip() for part in text.split(",")):
        if name in LORA_TARGET_GROUPS:
            chosen.update(LORA_TARGET_GROUPS[name])
        elif name in LORA_MATRICES:
            chosen.add(name)
        else:
            raise choice_error("lora-targets", name, (*LORA_MATRICES, *LORA_TARGET_GROUPS))
    return tuple(m for m in LORA_MATRICES if m in chosen)


def method_spec(method="pretrain", lora_rank=None, lora_targets_text=None,
                base_precision=None, packing=None, max_seq_len=None,
                reference_logprobs=None) -> Method:
    """The checked :class:`Method` of the options (None: the method's default); one
    :class:`~planner.errors.CapplanError` line for a bad name, value or an option the
    method does not take."""
    if not isinstance(method, str) or method not in METHODS:
        raise choice_error("method", method, METHODS)
    if method == "grpo":
        raise not_yet_grpo()
    for flag, value in (("lora-rank", lora_rank), ("lora-targets", lora_targets_text),
                        ("base-precision", base_precision)):
        _only_for(flag, value, LORA_METHODS, method)
    _only_for("packing", packing, VARIABLE_LENGTH_METHODS, method)
    _only_for("max-seq-len", max_seq_len, VARIABLE_LENGTH_METHODS, method)
    _only_for("reference-logprobs", reference_logprobs, ("dpo",), method)
    spec = {"name": method}
    if method in LORA_METHODS:
        rank = DEFAULT_LORA_RANK if lora_rank is None else lora_rank
        if isinstance(rank, bool) or not isinstance(rank, int | float) or rank != int(rank) \
                or not 1 <= rank <= MAX_LORA_RANK:
            raise CapplanError(f"--lora-rank {shown(rank)} must be a whole number from 1 to "
                               f"{MAX_LORA_RANK:,} (a rank near the hidden size is no longer "
                               "low-rank)")
        base = base_precision or ("nf4" if method == "qlora" else "bf16")
        _choice("base-precision", base, BASE_PRECISIONS)
        if method == "qlora" and base != "nf4":
            raise CapplanError(f"--method qlora quantises the base to nf4, not {base}; use "
                               f"--method lora --base-precision {base}")
        spec.update(lora_rank=int(rank), base_precision=base,
                    lora_targets=lora_targets(lora_targets_text or DEFAULT_LORA_TARGETS))
    if method in VARIABLE_LENGTH_METHODS:
        spec["packing"] = packing or "packed"
        _choice("packing", spec["packing"], PACKINGS)
        if max_seq_len is not None:
            if spec["packing"] != "padded":
                raise CapplanError("--max-seq-len applies to --packing padded (packed "
                                   "sequences have no padding)")
            if isinstance(max_seq_len, bool) or not isinstance(max_seq_len, int | float) \
                    or max_seq_len != int(max_seq_len) or max_seq_len < 1:
                raise CapplanError(f"--max-seq-len {shown(max_seq_len)} must be a whole "
                                   "number >= 1")
            spec["max_seq_len"] = int(max_seq_len)
    if method == "dpo":
        spec["reference_logprobs"] = reference_logprobs or "model"
        _choice("reference-logprobs", spec["reference_logprobs"], REFERENCE_LOGPROBS)
    return Method(**spec)


def check_padded_length(max_seq_len, seq_len) -> None:
    """--max-seq-len must hold the mean sequence length it pads (None: not stated)."""
    if max_seq_len is not None and seq_len is not None and max_seq_len < seq_len:
        raise CapplanError(f"--max-seq-len {max_seq_len:g} is shorter than the mean sequence "
                           f"length --seq-len {seq_len:g}")


def method_of(choices) -> Method:
    """The :class:`Method` of a run's choices (a RunChoices or a Scenario)."""
    return method_spec(choices.method, choices.lora_rank, choices.lora_targets,
                       choices.base_precision, choices.packing, choices.max_seq_len,
                       choices.reference_logprobs)


def method_inputs(m: Method, seq_len: float, model_seq_len: float) -> dict[str, float]:
    """Run-model inputs of method ``m`` for sequences of mean length ``seq_len`` (the
    model's context ``model_seq_len`` pads them unless ``--max-seq-len`` says).

    Pre-training and packed SFT return the pre-training inputs; padded sequences run at
    the padded length with the share of real tokens below 1.
    """
    lora = m.name in LORA_METHODS
    x = {"frozen_base": float(lora), "lora_rank": float(m.lora_rank or 0),
         **{f"lora_{name}": float(name in m.lora_targets) for name in LORA_MATRICES},
         "base_weight_bytes_per_param": BASE_BYTES_PER_PARAM[m.base_precision or "bf16"],
         "dequantize_base": float(m.base_precision == "nf4"),
         "reference_model": float(m.reference_logprobs == "model"),
         "token_efficiency": 1.0}
    if m.packing == "padded":
        padded = float(m.max_seq_len or model_seq_len)
        check_padded_length(padded, seq_len)
        x["seq_len"] = padded
        x["token_efficiency"] = float(padded_token_efficiency(seq_len, padded))
    return x
