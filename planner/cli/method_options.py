"""Command-line options of the training method (``--method lora --lora-rank 16 ...``),
shared by every command that evaluates or plans a run; checked by
:func:`planner.engine.inputs.method.method_spec` (docs/post-training.md)."""

from __future__ import annotations

import typer

from planner.engine.inputs.defaults import DEFAULTS

#: The run options of the method holder (the RunChoices / Scenario fields of a method).
METHOD_OPTIONS = ("method", "lora_rank", "lora_targets", "base_precision", "packing",
                  "max_seq_len", "reference_logprobs")


def method_options(
    method: str = typer.Option(
        DEFAULTS["method"], help="Training method: pretrain | sft (full fine-tune) | lora | "
        "qlora | dpo | grpo (docs/post-training.md)."),
    lora_rank: int = typer.Option(
        None, help="LoRA adapter rank r (lora, qlora; default 16)."),
    lora_targets: str = typer.Option(
        None, help="Matrices with adapters, comma-separated: q,k,v,o,gate,up,down or the "
        "groups qkv, attention, mlp, all-linear (lora, qlora; default all-linear)."),
    base_precision: str = typer.Option(
        None, help="Frozen base weights: bf16 | fp8 | nf4 (lora: bf16; qlora: nf4)."),
    packing: str = typer.Option(
        None, help="Variable-length sequences (sft, dpo): packed (default) | padded "
        "(--seq-len is then the mean length)."),
    max_seq_len: int = typer.Option(
        None, help="Length sequences are padded to with --packing padded (default: the "
        "model's context)."),
    reference_logprobs: str = typer.Option(
        None, help="DPO reference model: model (a frozen copy runs a forward pass, "
        "default) | precomputed (log-probs read from the data set)."),
):
    """Holder of the training-method options (never called)."""
