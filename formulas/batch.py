"""Batch size and data efficiency: the tokens a run needs grow with its batch.

Training to a given loss with batch B takes S optimizer steps and E = B S examples;
McCandlish et al. (2018) find both trade off along a hyperbola set by the gradient noise
scale B_noise: S = S_min (1 + B_noise / B) and E = E_min (1 + B / B_noise).  Well below
B_noise doubling the batch halves the steps at almost no extra data; well above it the
steps stop falling and the data (tokens, GPU-hours) grows linearly with B.  Kaplan et al.
(2020) measure the critical batch B_crit = E_min / S_min (McCandlish's estimate of B_noise)
of language models as a power of the loss, B_crit(L) = B* / L^(1/alpha_B), and the loss
reached by N non-embedding parameters on D tokens, L(N, D).

References
----------
.. [McCandlish2018] S. McCandlish, J. Kaplan, D. Amodei and the OpenAI Dota Team, "An
   Empirical Model of Large-Batch Training", arXiv:1812.06162, 2018.
.. [Kaplan2020] J. Kaplan et al., "Scaling Laws for Neural Language Models",
   arXiv:2001.08361, 2020.
"""

from __future__ import annotations

from .core import formula

MCCANDLISH = "McCandlish et al. 2018, arXiv:1812.06162 s2.2 (the step/example trade-off)"
KAPLAN = "Kaplan et al. 2020, arXiv:2001.08361"

#: Kaplan et al. 2020 eq. 1.5 / Table 2 (WebText2, GPT-2 BPE): L(N, D) constants.
KAPLAN_ALPHA_N = 0.076
KAPLAN_ALPHA_D = 0.095
KAPLAN_N_C = 8.8e13  # non-embedding parameters
KAPLAN_D_C = 5.4e13  # tokens
#: Kaplan et al. 2020 eq. 5.3 (s5.1): B_crit(L) = B* / L^(1/alpha_B).
KAPLAN_B_STAR_TOKENS = 2e8
KAPLAN_ALPHA_B = 0.21


@formula(reference=KAPLAN + " eq. 1.5 (L(N, D), WebText2 constants of s1.2)",
         domain={"non_embedding_params": ">0", "tokens": ">0"},
         symbols={"non_embedding_params": "N", "tokens": "D"}, result_latex="L")
def kaplan_loss(non_embedding_params, tokens):
    """Loss reached by N non-embedding parameters trained on D tokens (Kaplan et al.).

    Parameters
    ----------
    non_embedding_params : numeric
        Non-embedding parameters N (for a mixture of experts: those a token uses) [1].
    tokens : numeric
        Training tokens D [1].

    Returns
    -------
    numeric
        Cross-entropy loss [nat/token] (on Kaplan's WebText2; a scale for the critical
        batch, not a prediction of another corpus's loss).

    Examples
    --------
    Llama 3 70B (~68 B non-embedding parameters) on 15T tokens:

    >>> round(float(kaplan_loss(68e9, 15e12)), 3)
    1.726

    .. math:: L = \\left[\\left(\\frac{N_c}{N}\\right)^{\\alpha_N/\\alpha_D}
              + \\frac{D_c}{D}\\right]^{\\alpha_D}
    """
    return ((KAPLAN_N_C / non_embedding_params) ** (KAPLAN_ALPHA_N / KAPLAN_ALPHA_D)
            + KAPLAN_D_C / tokens) ** KAPLAN_ALPHA_D


@formula(reference=KAPLAN + " eq. 5.3 (s5.1: B* ~ 2e8 tokens, alpha_B ~ 0.21)",
         domain={"loss_nats": ">0"}, symbols={"loss_nats": "L"},
         result_latex=r"B_{crit}")
def kaplan_critical_batch_tokens(loss_nats):
    """Critical batch of a language model at loss L (Kaplan et al.), McCandlish's B_noise.

    Parameters
    ----------
    loss_nats : numeric
        Loss reached [nat/token].

    Returns
    -------
    numeric
        Critical batch B_crit = E_min / S_min [tokens].

    Examples
    --------
    At Llama 3 70B's loss above, 14.9 M tokens (Meta trained it at 16 M, arXiv:2407.21783
    s3.4.1):

    >>> round(float(kaplan_critical_batch_tokens(1.726)) / 1e6, 1)
    14.9

    .. math:: B_{crit} = \\frac{B_*}{L^{1/\\alpha_B}}
    """
    return KAPLAN_B_STAR_TOKENS / loss_nats ** (1 / KAPLAN_ALPHA_B)


@formula(reference=MCCANDLISH + ", E = E_min (1 + B / B_noise); " + KAPLAN + " eq. 5.1",
         domain={"min_tokens": ">=0", "batch_tokens": ">0", "noise_batch_tokens": ">0"},
         symbols={"min_tokens": r"E_{min}", "batch_tokens": "B",
                  "noise_batch_tokens": r"B_{noise}"}, result_latex="E")
def tokens_to_target_loss(min_tokens, batch_tokens, noise_batch_tokens):
    """Tokens needed to reach a loss with batch B: E_min (1 + B / B_noise).

    Parameters
    ----------
    min_tokens : numeric
        Tokens needed with a vanishing batch, E_min [1].
    batch_tokens : numeric
        Global batch B [tokens].
    noise_batch_tokens : numeric
        Gradient noise scale B_noise (the critical batch) [tokens].

    Returns
    -------
    numeric
        Tokens needed E [1]; twice E_min at the critical batch.

    Examples
    --------
    >>> float(tokens_to_target_loss(1e12, 4e6, 4e6))
    2000000000000.0

    .. math:: E = E_{min}\\left(1 + \\frac{B}{B_{noise}}\\right)
    """
    return min_tokens * (1 + batch_tokens / noise_batch_tokens)


@formula(reference=MCCANDLISH + ", S = S_min (1 + B_noise / B); " + KAPLAN + " eq. 5.1",
         domain={"min_steps": ">=0", "batch_tokens": ">0", "noise_batch_tokens": ">0"},
         symbols={"min_steps": r"S_{min}", "batch_tokens": "B",
                  "noise_batch_tokens": r"B_{noise}"}, result_latex="S")
def steps_to_target_loss(min_steps, batch_tokens, noise_batch_tokens):
    """Optimizer steps needed to reach a loss with batch B: S_min (1 + B_noise / B).

    Parameters
    ----------
    min_steps : numeric
        Steps needed with an unbounded batch, S_min [1].
    batch_tokens : numeric
        Global batch B [tokens].
    noise_batch_tokens : numeric
        Gradient noise scale B_noise [tokens].

    Returns
    -------
    numeric
        Steps needed S [1].

    Examples
    --------
    >>> float(steps_to_target_loss(1000.0, 4e6, 4e6))
    2000.0

    .. math:: S = S_{min}\\left(1 + \\frac{B_{noise}}{B}\\right)
    """
    return min_steps * (1 + noise_batch_tokens / batch_tokens)


@formula(reference=MCCANDLISH + " (E = E_min (1 + B / B_noise) at two batches)",
         domain={"tokens": ">=0", "reference_batch_tokens": ">0", "batch_tokens": ">0",
                 "noise_batch_tokens": ">0"},
         symbols={"tokens": "D", "reference_batch_tokens": r"B_{ref}", "batch_tokens": "B",
                  "noise_batch_tokens": r"B_{noise}"}, result_latex="D_B")
def tokens_at_batch(tokens, reference_batch_tokens, batch_tokens, noise_batch_tokens):
    """Tokens needed with batch B to reach the loss D tokens reach with batch B_ref.

    Both runs need the same E_min = D / (1 + B_ref / B_noise); equal batches give D
    exactly.

    Parameters
    ----------
    tokens : numeric
        Tokens D needed with the reference batch [1].
    reference_batch_tokens : numeric
        Reference batch B_ref [tokens].
    batch_tokens : numeric
        Batch B of the run [tokens].
    noise_batch_tokens : numeric
        Gradient noise scale B_noise [tokens].

    Returns
    -------
    numeric
        Tokens needed with batch B [1].

    Examples
    --------
    15T tokens at an 8 M-token batch, trained at 16 M with a 15 M critical batch:

    >>> round(float(tokens_at_batch(15e12, 8e6, 16e6, 15e6)) / 1e12, 2)
    20.22

    .. math:: D_B = D\\,\\frac{1 + B / B_{noise}}{1 + B_{ref} / B_{noise}}
    """
    # the ratio first: equal batches give exactly 1, hence exactly D
    return tokens * ((1 + batch_tokens / noise_batch_tokens)
                     / (1 + reference_batch_tokens / noise_batch_tokens))
