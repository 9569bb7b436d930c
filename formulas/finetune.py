"""Fine-tuning: LoRA adapters on a frozen base, QLoRA's 4-bit base, padded batches.

A LoRA run freezes the base weights W (d_in x d_out) and trains, beside each targeted
matrix, a low-rank update B A with A (d_in x r) and B (r x d_out) [Hu2021].  A frozen
weight needs no weight gradient: its backward pass keeps only the input-gradient GEMM
(as long as the forward GEMM), so the backward of the base costs ~1x its forward
instead of 2x; the adapters are trained and cost forward + 2x backward as usual.
QLoRA stores the base in 4-bit NormalFloat (NF4) with block-wise quantisation
constants, themselves quantised ("double quantisation"), and dequantises each weight
to BF16 before every GEMM that uses it [Dettmers2023].

References
----------
.. [Hu2021] E. J. Hu et al., "LoRA: Low-Rank Adaptation of Large Language Models",
   arXiv:2106.09685, 2021, s4.1 (h = W0 x + B A x, A: r x k, B: d x r; only A and B
   receive gradients).
.. [Dettmers2023] T. Dettmers et al., "QLoRA: Efficient Finetuning of Quantized LLMs",
   arXiv:2305.14314, 2023, s3 (NF4, block size 64; double quantisation: FP8 constants of
   block size 256, "reduces the memory footprint ... from 32/64 = 0.5 bits, to
   8/64 + 32/(64 * 256) = 0.127 bits per parameter"; dequantisation to BF16 per use).
.. [Narayanan2021] D. Narayanan et al., SC'21, arXiv:2104.04473 s5.1 (backward = 2x
   forward: the input-gradient and the weight-gradient GEMMs, each as long as the
   forward GEMM).
"""

from __future__ import annotations

from .core import formula

HU = "Hu et al. 2021 (LoRA), arXiv:2106.09685 s4.1"
DETTMERS = "Dettmers et al. 2023 (QLoRA), arXiv:2305.14314 s3"
NARAYANAN = "Narayanan et al. 2021 (SC'21), arXiv:2104.04473 s5.1"

_SYM = {
    "rank": "r", "d_in": "d_{in}", "d_out": "d_{out}",
    "forward_time_s": "t_f", "recomputed_forward_time_s": "t_r",
    "frozen_gemm_forward_time_s": "t_w", "forward_flops_per_token": "F",
    "frozen_gemm_forward_flops_per_token": "F_w", "weight_bits": "b_w",
    "block_size": "B_1", "constant_bits": "b_c", "second_block_size": "B_2",
    "second_constant_bits": "b_{c2}", "params": r"\Psi",
    "stored_bytes_per_param": "K_q", "bytes_per_element": "e",
    "mean_seq_len": r"\bar{s}", "padded_seq_len": "s_p",
}


@formula(reference=HU + " (A: r x d_in, B: d_out x r)",
         domain={"rank": ">=0", "d_in": ">=0", "d_out": ">=0"}, symbols=_SYM,
         result_latex="P_{lora}")
def lora_adapter_params(rank, d_in, d_out):
    """Trainable parameters of one LoRA adapter beside a d_in x d_out weight matrix.

    Parameters
    ----------
    rank : numeric
        Adapter rank r [1].
    d_in : numeric
        Input width of the frozen matrix [1].
    d_out : numeric
        Output width of the frozen matrix [1].

    Returns
    -------
    numeric
        Adapter parameters [1].

    Examples
    --------
    Rank 16 beside a 4096 x 4096 projection (Llama 2 7B's q_proj):

    >>> lora_adapter_params(16, 4096, 4096)
    131072.0

    .. math:: P_{lora} = r (d_{in} + d_{out})
    """
    return 1.0 * rank * (d_in + d_out)


@formula(reference=NARAYANAN + " (backward = input-gradient + weight-gradient GEMMs, each "
         "as long as the forward); a frozen weight has no weight gradient: " + HU,
         domain={"forward_time_s": ">=0", "recomputed_forward_time_s": ">=0",
                 "frozen_gemm_forward_time_s": ">=0"},
         symbols=_SYM, result_latex="t_{train}")
def frozen_training_pass_time(forward_time_s, recomputed_forward_time_s,
                              frozen_gemm_forward_time_s):
    """Forward, backward and recomputed forward of work whose frozen GEMMs skip their
    weight gradients.

    Parameters
    ----------
    forward_time_s : numeric
        Forward time of the work, frozen GEMMs included, t_f [s].
    recomputed_forward_time_s : numeric
        Forward work executed again in the backward pass, t_r [s].
    frozen_gemm_forward_time_s : numeric
        Forward time of the GEMMs with frozen weights, t_w [s] (0: all trained).

    Returns
    -------
    numeric
        Training time of the work [s].

    Examples
    --------
    A layer of 2 ms forward, 1.6 ms of it in frozen GEMMs, no recompute:

    >>> round(frozen_training_pass_time(2e-3, 0.0, 1.6e-3), 6)
    0.0044

    .. math:: t_{train} = 3 t_f + t_r - t_w
    """
    return 3 * forward_time_s + recomputed_forward_time_s - frozen_gemm_forward_time_s


@formula(reference=NARAYANAN + " (model FLOPs = 3 x forward); a frozen weight's "
         "weight-gradient GEMM is not run: " + HU,
         domain={"forward_flops_per_token": ">=0",
                 "frozen_gemm_forward_flops_per_token": ">=0"},
         symbols=_SYM, result_latex="F_{train}")
def frozen_training_flops_per_token(forward_flops_per_token,
                                    frozen_gemm_forward_flops_per_token):
    """Model FLOPs per token of a training step whose frozen GEMMs skip weight gradients.

    Parameters
    ----------
    forward_flops_per_token : numeric
        Forward FLOPs per token, adapters included, F [FLOP].
    frozen_gemm_forward_flops_per_token : numeric
        Forward FLOPs per token of the GEMMs with frozen weights, F_w [FLOP].

    Returns
    -------
    numeric
        Training FLOPs per token [FLOP].

    Examples
    --------
    >>> frozen_training_flops_per_token(100.0, 90.0)
    210.0

    .. math:: F_{train} = 3 F - F_w
    """
    return 3 * forward_flops_per_token - frozen_gemm_forward_flops_per_token


@formula(reference=DETTMERS + " (NF4 with block size 64; double quantisation: 8-bit "
         "constants of block size 256 with one FP32 constant each)",
         domain={"weight_bits": ">0", "block_size": ">=1", "constant_bits": ">=0",
                 "second_block_size": ">=1", "second_constant_bits": ">=0"},
         symbols=_SYM, result_latex="K_q")
def quantized_bytes_per_param(weight_bits, block_size, constant_bits, second_block_size,
                              second_constant_bits):
    """Stored bytes per weight of a block-wise quantised base (QLoRA's NF4).

    Parameters
    ----------
    weight_bits : numeric
        Bits of a quantised weight, b_w [bit].
    block_size : numeric
        Weights sharing one quantisation constant, B_1 [1].
    constant_bits : numeric
        Bits of a (first-level) constant, b_c [bit].
    second_block_size : numeric
        First-level constants sharing one second-level constant, B_2 [1].
    second_constant_bits : numeric
        Bits of a second-level constant, b_c2 [bit].

    Returns
    -------
    numeric
        Bytes per parameter [B].

    Examples
    --------
    NF4 with double quantisation (the paper's 4 + 0.127 bits):

    >>> round(quantized_bytes_per_param(4, 64, 8, 256, 32), 4)
    0.5159

    .. math:: K_q = \\frac{1}{8}\\left(b_w + \\frac{b_c}{B_1}
              + \\frac{b_{c2}}{B_1 B_2}\\right)
    """
    return (weight_bits + constant_bits / block_size
            + second_constant_bits / (block_size * second_block_size)) / 8


@formula(reference=DETTMERS + " (doubleDequant to BF16 before each matmul, eq. 5-6)",
         domain={"params": ">=0", "stored_bytes_per_param": ">=0",
                 "bytes_per_element": ">0"},
         symbols=_SYM, result_latex="Q_{dq}")
def dequantization_bytes(params, stored_bytes_per_param, bytes_per_element):
    """HBM traffic of dequantising weights once: the stored form read, BF16 written.

    Parameters
    ----------
    params : numeric
        Weights dequantised [1].
    stored_bytes_per_param : numeric
        Bytes per stored (quantised) weight, constants included, K_q [B].
    bytes_per_element : numeric
        Bytes per dequantised element e [B].

    Returns
    -------
    numeric
        Bytes moved [B].

    Examples
    --------
    >>> dequantization_bytes(1e9, 0.5, 2.0)
    2500000000.0

    .. math:: Q_{dq} = \\Psi (K_q + e)
    """
    return params * (stored_bytes_per_param + bytes_per_element)


@formula(reference="Padding to a fixed length: every sequence costs s_p tokens of work, "
         "s-bar of them real (Krell et al. 2021, arXiv:2107.02027 s1: packing removes "
         "the padding)",
         domain={"mean_seq_len": ">0", "padded_seq_len": ">0"}, symbols=_SYM,
         result_latex=r"\eta_{tok}")
def padded_token_efficiency(mean_seq_len, padded_seq_len):
    """Share of processed tokens that are real (not padding) when sequences of mean
    length s-bar are padded to s_p.

    Parameters
    ----------
    mean_seq_len : numeric
        Mean sequence length s-bar [1].
    padded_seq_len : numeric
        Length every sequence is padded to, s_p [1].

    Returns
    -------
    numeric
        Real tokens per processed token [1].

    Examples
    --------
    >>> padded_token_efficiency(1024, 4096)
    0.25

    .. math:: \\eta_{tok} = \\bar{s} / s_p
    """
    return mean_seq_len / padded_seq_len


@formula(reference="The MLP's input matrices: up, and gate in a gated MLP of 3 matrices "
         "(SwiGLU, Shazeer 2020, arXiv:2002.05202); adapters per " + HU,
         domain={"mlp_matrices": ">=1", "lora_gate": "[0,1]", "lora_up": "[0,1]"},
         symbols={"mlp_matrices": "n_m", "lora_gate": "g", "lora_up": "u"},
         result_latex="n_{in}")
def lora_mlp_input_adapters(mlp_matrices, lora_gate, lora_up):
    """Adapters beside an MLP's input matrices (gate exists only in a gated MLP).

    Parameters
    ----------
    mlp_matrices : numeric
        Weight matrices of the MLP, 2 (GELU) or 3 (gated) [1].
    lora_gate : numeric
        1 if the gate projection carries an adapter [1].
    lora_up : numeric
        1 if the up projection carries an adapter [1].

    Returns
    -------
    numeric
        Adapted input matrices [1].

    Examples
    --------
    >>> lora_mlp_input_adapters(3, 1, 1), lora_mlp_input_adapters(2, 1, 1)
    (2.0, 1.0)

    .. math:: n_{in} = g (n_m - 2) + u
    """
    return lora_gate * (mlp_matrices - 2) + lora_up


@formula(reference=DETTMERS + " (each GEMM dequantises its weight before use); the "
         "backward's input-gradient GEMM reads the weight again, a full recompute a third "
         "time (Korthikanti et al. 2022, arXiv:2205.05198 s5)",
         domain={"full_recompute": "[0,1]"}, symbols={"full_recompute": "r"},
         result_latex="n_{dq}")
def dequantizations_per_pass(full_recompute):
    """Times a frozen quantised weight is dequantised per micro-batch.

    Parameters
    ----------
    full_recompute : numeric
        1 with full activation recompute, 0 without [1].

    Returns
    -------
    numeric
        Dequantisations of each weight [1].

    Examples
    --------
    >>> dequantizations_per_pass(0), dequantizations_per_pass(1)
    (2.0, 3.0)

    .. math:: n_{dq} = 2 + r
    """
    return 2 + full_recompute


@formula(reference="A frozen GEMM's input serves only its weight gradient (dW = x^T dy): "
         + NARAYANAN + "; Korthikanti et al. 2022, arXiv:2205.05198 s4.1 (the inputs kept "
         "per layer); an adapter beside the matrix still reads it: " + HU,
         domain={"norm_outputs_bytes": ">=0", "down_input_bytes": ">=0",
                 "attention_input_read": "[0,1]", "mlp_input_read": "[0,1]",
                 "down_input_read": "[0,1]"},
         symbols={"norm_outputs_bytes": "M_n", "down_input_bytes": "M_d",
                  "attention_input_read": "a", "mlp_input_read": "m",
                  "down_input_read": "d"}, result_latex=r"\Delta M")
def frozen_inputs_not_kept_bytes(norm_outputs_bytes, down_input_bytes, attention_input_read,
                                 mlp_input_read, down_input_read):
    """Activation bytes of one layer a frozen base need not keep for its backward.

    The two norm outputs are the QKV and the MLP inputs (half each); the down projection
    reads the MLP's inner activation.  Each goes unless an adapter reads it.

    Parameters
    ----------
    norm_outputs_bytes : numeric
        Bytes of both norm outputs as kept for the backward, M_n [B].
    down_input_bytes : numeric
        Bytes of the down projection's input as kept, M_d [B].
    attention_input_read : numeric
        1 if an adapter on q, k or v reads the QKV input [1].
    mlp_input_read : numeric
        1 if an adapter on gate or up reads the MLP input [1].
    down_input_read : numeric
        1 if an adapter on down reads its input [1].

    Returns
    -------
    numeric
        Bytes not kept [B].

    Examples
    --------
    >>> frozen_inputs_not_kept_bytes(100.0, 50.0, 1, 0, 0)
    100.0

    .. math:: \\Delta M = (1 - a) M_n / 2 + (1 - m) M_n / 2 + (1 - d) M_d
    """
    return ((1 - attention_input_read) * norm_outputs_bytes / 2
            + (1 - mlp_input_read) * norm_outputs_bytes / 2
            + (1 - down_input_read) * down_input_bytes)
