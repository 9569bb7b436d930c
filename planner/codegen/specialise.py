"""Specialised copies of the search kernel: the run model with its optional mechanisms off.

The run model carries every mechanism a run may have (LoRA and DPO terms, multi-head latent
attention, linear and sliding-window attention, multi-token prediction, DualPipe, the MoE
dispatchers, CUDA graphs, GoCkpt, ...).  A plain pre-training search has them all off, yet
its kernel computes each one per candidate and multiplies it by a zero: since issue 41 that
is 30-55 % of the search kernel's arithmetic (docs/performance.md).  :data:`VARIANTS` names
the scalar inputs each specialised copy takes as zero; :func:`folded` substitutes them and folds the kernel's
syntax tree (constant propagation, ``0 * x``, ``x + 0``, ``1 * x``, selects on constant
conditions), then drops what no output reads.  The compiled search
(:mod:`planner.codegen.native_source`) picks, per call, the first variant whose every
folded input is exactly zero in that call's scalars, else the full kernel.

The folded kernel gives the full kernel's values for every candidate whose terms are finite:
``x + 0`` and ``1 * x`` are exact, ``0 * x`` is ``0`` for finite ``x`` (a ``-0.0`` may
become ``+0.0``, which compares equal).  ``tests/test_native_search.py`` checks that the
variants keep the same rows and values as the full kernel on whole layout spaces.
"""

from __future__ import annotations

import ast
import copy
import math

from planner.engine.run.kernel import loaded_names

#: The optional mechanisms of the model, the workload and the scenario a specialised kernel
#: drops (and DualPipe, a schedule only the DeepSeek-style stacks of MLA/MTP models run):
#: the scalar inputs that are zero when the mechanism is off.  (A stack's switch for
#: a model feature - its fused sink kernel, its MLA up-projection recompute - needs no entry:
#: it only multiplies the feature's own terms, which fold away with the feature.)
FEATURES = {
    "fine-tuning (frozen base, LoRA, DPO reference model, quantised base)": (
        "frozen_base", "reference_model", "dequantize_base", "lora_rank", "lora_q",
        "lora_k", "lora_v", "lora_o", "lora_gate", "lora_up", "lora_down"),
    "multi-head latent attention": ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim"),
    "linear attention layers": ("linear_attention_layers",),
    "hybrid Mamba-2 and one-part layers": ("mamba_layers", "mixer_free_layers",
                                           "mlp_free_layers"),
    "latent MoE": ("moe_latent_dim",),
    "sliding-window attention layers": ("window_layers",),
    "attention sinks": ("attention_sinks",),
    "attention-logit soft-capping": ("attention_softcap",),
    "multi-token prediction": ("mtp_layers",),
    "DualPipe": ("dualpipe",),
    "GoCkpt checkpoints": ("ckpt_gockpt",),
    "a fixed checkpoint interval": ("checkpoint_interval_fixed_s",),
    "commitment terms": ("commitment_term_s", "commitment_reuse_fraction"),
    "garbage-collection pauses": ("gc_duration_s", "gc_planned"),
    "extra layers on a pipeline stage": ("stage_extra_layers",),
    "owned-hardware pricing": ("use_tco",),
    "maintenance windows": ("maintenance_fraction",),
}
#: The stack's own mechanisms a Megatron-Core dense stack leaves off (the MoE stacks set
#: several): dropped too by the ``lean`` kernel.
STACK_TERMS = {
    "MoE dispatchers (hierarchical, DeepEP, FP8 dispatch, host sync)": (
        "hierarchical_dispatch", "deepep_dispatch", "fp8_dispatch", "dispatch_host_sync"),
    "MoE stack terms (expert overheads, load imbalance, token drop, overlap)": (
        "expert_load_cv", "expert_overhead_s", "moe_layer_overhead_s", "token_drop",
        "recompute_moe_act", "recompute_moe", "ep_overlap", "comm_sm_fraction",
        "shared_experts"),
    "CUDA graphs": ("cuda_graphs",),
    "recomputed norms and MLPs": ("recompute_norms", "recompute_mlp"),
}
_PLAIN = tuple(name for names in FEATURES.values() for name in names)
_STACK = tuple(name for names in STACK_TERMS.values() for name in names)

#: The mechanisms of the newest architectures: a run of any other model (MLA, MTP,
#: windows, sinks, DualPipe, ...) folds them away in the ``transformer`` kernel.
_HYBRID = (*FEATURES["hybrid Mamba-2 and one-part layers"], *FEATURES["latent MoE"])

#: The specialised kernels, most specialised first: (C suffix, scalar inputs taken as 0).
#: ``dense``: a dense model on any stack; ``lean``: an MoE model on a stack without MoE
#: mechanisms of its own; ``plain``: an MoE model on an MoE stack; ``transformer``: any
#: model without Mamba layers, one-part blocks or LatentMoE.
VARIANTS = (
    ("dense", (*_PLAIN, "moe_layers")),
    ("lean", (*_PLAIN, *_STACK)),
    ("plain", _PLAIN),
    ("transformer", _HYBRID),
)


def folded(func: ast.FunctionDef, zeros: tuple[str, ...]) -> ast.FunctionDef:
    """``func`` (a kernel: straight-line assignments, then ``return (outputs...)``) with the
    arguments ``zeros`` taken as ``0.0``, folded, and without the assignments no output
    reads.  Its arguments are unchanged (callers pass the same scalars)."""
    func = copy.deepcopy(func)
    constants = {name: 0.0 for name in zeros}
    *statements, returned = func.body
    kept = []
    for statement in statements:
        if not isinstance(statement, ast.Assign):
            continue  # the kernel's ``del`` of a spent array: no meaning in C
        statement.value = _Fold(constants).visit(statement.value)
        target = statement.targets[0].id
        if isinstance(statement.value, ast.Constant):
            constants[target] = statement.value.value
        else:
            constants.pop(target, None)
            kept.append(statement)
    returned.value = _Fold(constants).visit(returned.value)
    live = loaded_names(returned.value)
    body = []
    for statement in reversed(kept):
        if statement.targets[0].id in live:
            body.append(statement)
            live |= loaded_names(statement.value)
    func.body = [*reversed(body), returned]
    return func


def _number(node, value: float | None = None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, float) \
        and (value is None or node.value == value)


def _constant(value: float):
    """``value`` as a node, or ``None`` where folding would change what C computes (a NaN,
    an overflow)."""
    if not isinstance(value, float) or math.isnan(value):
        return None
    return ast.Constant(value)


_ARITHMETIC = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
               ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a / b}
_COMPARISONS = {ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
                ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b,
                ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b}
_NUMPY_COMPARISONS = {"greater": ast.Gt, "greater_equal": ast.GtE, "less": ast.Lt,
                      "less_equal": ast.LtE, "equal": ast.Eq, "not_equal": ast.NotEq}
_EXACT_CALLS = {"minimum": min, "maximum": max, "ceil": lambda a: float(math.ceil(a)),
                "floor": lambda a: float(math.floor(a)), "sqrt": math.sqrt}


class _Fold(ast.NodeTransformer):
    """Constant folding of one kernel expression, with ``constants`` by name."""

    def __init__(self, constants: dict[str, float]):
        self.constants = constants

    def visit_Name(self, node):
        if node.id in self.constants:
            return ast.Constant(float(self.constants[node.id]))
        return node

    def visit_Constant(self, node):
        if isinstance(node.value, int) and not isinstance(node.value, bool):
            return ast.Constant(float(node.value))
        return node

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if _number(node.operand) and isinstance(node.op, ast.USub | ast.UAdd):
            value = node.operand.value
            return ast.Constant(-value if isinstance(node.op, ast.USub) else value)
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        left, right, op = node.left, node.right, type(node.op)
        if _number(left) and _number(right) and op in _ARITHMETIC:
            try:
                folded_node = _constant(_ARITHMETIC[op](left.value, right.value))
            except ZeroDivisionError:
                folded_node = None
            return folded_node or node
        if op is ast.Mult and (_number(left, 0.0) or _number(right, 0.0)):
            return ast.Constant(0.0)
        if op is ast.Div and _number(left, 0.0):
            return ast.Constant(0.0)
        if op is ast.Mult and _number(left, 1.0):
            return right
        if op in (ast.Mult, ast.Div) and _number(right, 1.0):
            return left
        if op is ast.Add and _number(left, 0.0):
            return right
        if op in (ast.Add, ast.Sub) and _number(right, 0.0):
            return left
        if op is ast.Sub and _number(left, 0.0):
            return ast.UnaryOp(ast.USub(), right)
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) == 1 and _number(node.left) and _number(node.comparators[0]):
            test = _COMPARISONS.get(type(node.ops[0]))
            if test is not None:
                return ast.Constant(1.0 if test(node.left.value, node.comparators[0].value)
                                    else 0.0)
        return node

    def visit_Call(self, node):
        node.args = [self.visit(a) for a in node.args]
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
        values = [a.value for a in node.args if _number(a)]
        if node.keywords or len(values) < len(node.args):
            if name in ("where", "np_pick") and len(node.args) == 3 and _number(node.args[0]):
                return node.args[1] if node.args[0].value != 0.0 else node.args[2]
            return node
        if name in _NUMPY_COMPARISONS and len(values) == 2:
            test = _COMPARISONS[_NUMPY_COMPARISONS[name]]
            return ast.Constant(1.0 if test(*values) else 0.0)
        if name in ("where", "np_pick") and len(values) == 3:
            return ast.Constant(values[1] if values[0] != 0.0 else values[2])
        if name in _EXACT_CALLS:
            try:
                return _constant(_EXACT_CALLS[name](*values)) or node
            except (TypeError, ValueError):
                return node
        return node  # exp, log, pow of constants: left to C's own functions
