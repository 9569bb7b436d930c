"""Stragglers: a synchronising group of n ranks waits for its slowest member.

If each rank's step time is an independent draw, the group's step takes the
maximum of n draws; its expectation comes from order statistics.  Rare
per-rank pauses (garbage collection, OS jitter) add a second, additive term.

References
----------
.. [Blom1958] G. Blom, "Statistical Estimates and Transformed Beta-Variables",
   Wiley, 1958.
.. [Harter1961] H. L. Harter, "Expected values of normal order statistics",
   Biometrika 48(1/2):151-165, 1961. doi:10.2307/2333139
.. [Royston1982] J. P. Royston, "Algorithm AS 177: Expected normal order
   statistics (exact and approximate)", J. R. Stat. Soc. C (Applied Statistics)
   31(2):161-165, 1982. doi:10.2307/2347982
.. [Renyi1953] A. Renyi, "On the theory of order statistics", Acta Math. Acad.
   Sci. Hungar. 4:191-231, 1953. doi:10.1007/BF02127580
.. [Lin2025] J. Lin et al., "Understanding Stragglers in Large Model Training
   Using What-if Analysis", OSDI 2025, arXiv:2505.05713.
.. [Narayanan2021] D. Narayanan et al., "Efficient Large-Scale Language Model
   Training on GPU Clusters Using Megatron-LM", SC21, arXiv:2104.04473.

Software stragglers (Lin et al. 2025): garbage-collection pauses, uneven
pipeline stages (the last stage also computes the LM head and loss) and slow
nodes.  Each cause below is a slowdown S = actual / straggler-free step time
or an additive delay; the share of GPU-hours it wastes is 1 - 1/S
(:func:`straggler_waste_fraction`, the paper's metric).
"""

from __future__ import annotations

from .core import formula
from .ops import exp, expm1, harmonic, log, maximum, ndtri

ROYSTON = ("Royston 1982, Algorithm AS 177, Applied Statistics 31(2):161-165, "
           "doi:10.2307/2347982 (approximation for i = 1, without the small-n correction)")
BLOM = "Blom 1958, Statistical Estimates and Transformed Beta-Variables; Harter 1961, " \
       "Biometrika 48:151, doi:10.2307/2333139"
RENYI = "Renyi 1953, Acta Math. Hungar. 4:191, doi:10.1007/BF02127580"

_SYM = {"n": "n", "mean": r"\mu", "std": r"\sigma", "mu": r"\mu", "sigma": r"\sigma"}


def _royston_max_z(n):
    """E[max of n iid standard normals] by Royston's AS 177 tail area, clamped at 0.

    The clamp only acts for n < 1.07 (the raw formula gives -0.067 at n = 1),
    making n = 1 exact.
    """
    e1 = (1 - 0.419885) / (n + 0.474798)
    e2 = e1 ** 0.282765
    tail = e1 + e2 * (0.112063 + e2 * 0.080122) / n
    return maximum(-ndtri(tail), 0)


def _max_z_variance(n):
    """Var of the max of n iid standard normals, least-squares rational fit in ln n.

    Fitted here to the exact variance (numerical integration) at 60 log-spaced n
    in 1..1e5: exact at n = 1, relative error <= 12 % elsewhere.
    """
    ln_n = log(n)
    return 1 / (1 + 0.7084244 * ln_n + 0.04618459 * ln_n * ln_n)


@formula(reference=ROYSTON + "; exact values: Harter 1961, doi:10.2307/2333139",
         domain={"n": ">=1", "mean": "real", "std": ">=0"}, symbols=_SYM,
         result_latex=r"E[\max_n X]")
def expected_max_normal(n, mean, std):
    """Expected maximum of n iid normal random variables.

    Royston's (1982) approximation of the largest expected normal order
    statistic, z_n = -Phi^-1(p_n), p_n = e + e^lambda (d1 + e^lambda d2)/n,
    e = (1 - epsilon)/(n + gamma) (AS 177 constants for i = 1), clamped at 0 so
    that n = 1 gives ``mean`` exactly.  Error against exact numerical
    integration of E[max] = int x n phi(x) Phi(x)^(n-1) dx, for every integer n
    in 1..100000: at most 0.0086 std (n = 2; AS 177 corrects n = 2 with a
    table), at most 0.0017 std for n >= 3 and at most 0.0009 std for n >= 4
    (0.0008 std at n = 1e5).  Blom's mean + std Phi^-1((n - 0.375)/(n + 0.25))
    (:func:`expected_max_normal_blom`) errs by up to 0.025 std.  Increases
    strictly with integer n.

    Parameters
    ----------
    n : numeric
        Ranks in the synchronising group [1].
    mean : numeric
        Mean of each rank's time, mu [s].
    std : numeric
        Standard deviation of each rank's time, sigma [s].

    Returns
    -------
    numeric
        Expected maximum, the group's expected time [s].

    .. math:: E[\\max_n X] \\approx \\mu + \\sigma \\max(0, -\\Phi^{-1}(p_n))
    """
    return mean + std * _royston_max_z(n)


@formula(reference=BLOM + ", alpha = 3/8", domain={"n": ">=1", "mean": "real", "std": ">=0"},
         symbols=_SYM, result_latex=r"E[\max_n X]_{Blom}")
def expected_max_normal_blom(n, mean, std):
    """Expected maximum of n iid normal random variables, Blom's approximation.

    Exact at n = 1 (Phi^-1(1/2) = 0); error against exact numerical
    integration at most 0.0253 std (n = 2, overestimate), for every integer n
    in 1..100000.  :func:`expected_max_normal` is about 3x more accurate.

    Parameters
    ----------
    n : numeric
        Ranks in the synchronising group [1].
    mean : numeric
        Mean of each rank's time, mu [s].
    std : numeric
        Standard deviation of each rank's time, sigma [s].

    Returns
    -------
    numeric
        Expected maximum [s].

    .. math:: E[\\max_n X] \\approx \\mu + \\sigma\\,\\Phi^{-1}\\!\\left(\\frac{n - 3/8}{n + 1/4}\\right)
    """
    return mean + std * ndtri((n - 0.375) / (n + 0.25))


@formula(reference=RENYI + " (exponential spacings: max of n = sum of Exp(k/mean), k=1..n)",
         domain={"n": ">=1", "mean": ">0"}, symbols=_SYM, result_latex=r"E[\max_n X]")
def expected_max_exponential(n, mean):
    """Expected maximum of n iid exponential random variables (exact).

    Parameters
    ----------
    n : numeric
        Ranks in the synchronising group [1].
    mean : numeric
        Mean of each exponential variable [s].

    Returns
    -------
    numeric
        Expected maximum [s].

    .. math:: E[\\max_n X] = \\mu H_n = \\mu \\sum_{k=1}^{n} \\frac{1}{k}
    """
    return mean * harmonic(n)


@formula(reference="max of lognormals = exp(max of normals); cumulant (second-order) "
         "approximation E[e^{sM}] ~ e^{s m + s^2 v/2} with m from " + ROYSTON,
         domain={"n": ">=1", "mu": "real", "sigma": ">=0"}, symbols=_SYM,
         result_latex=r"E[\max_n X]")
def expected_max_lognormal(n, mu, sigma):
    """Expected maximum of n iid lognormal random variables, X = exp(mu + sigma Z).

    max X = exp(mu + sigma M_n) with M_n the maximum of n standard normals;
    E[exp(sigma M_n)] is taken to second order in its cumulants, with the mean
    of M_n from :func:`expected_max_normal` and its variance from a rational
    fit in ln n (exact at n = 1, so n = 1 gives the lognormal mean
    exp(mu + sigma^2/2) exactly).  Relative error against exact numerical
    integration for integer n in 1..100000: <= 0.1 % for sigma <= 0.1,
    <= 0.3 % for sigma <= 0.25, <= 0.9 % for sigma <= 0.5, <= 3.3 % for
    sigma <= 1.  Increases with integer n for sigma <= 3.

    Parameters
    ----------
    n : numeric
        Ranks in the synchronising group [1].
    mu : numeric
        Mean of log X (X in seconds) [1].
    sigma : numeric
        Standard deviation of log X [1].

    Returns
    -------
    numeric
        Expected maximum [s].

    .. math:: E[\\max_n X] \\approx \\exp\\left(\\mu + \\sigma m_n + \\tfrac12 \\sigma^2 v_n\\right)
    """
    return exp(mu + sigma * _royston_max_z(n) + sigma * sigma * _max_z_variance(n) / 2)


@formula(reference="Probability that at least one of n independent ranks pauses, "
         "1-(1-p)^n; cf. Petrini, Kerbyson & Pakin 2003 (OS noise), "
         "doi:10.1145/1048935.1050204",
         domain={"ranks": ">=1", "probability": "[0,1]", "duration_s": ">=0"},
         symbols={"ranks": "n", "probability": "p", "duration_s": "d"},
         result_latex=r"\Delta T_{pause}")
def pause_delay(ranks, probability, duration_s):
    """Expected extra step time from rare per-rank pauses.

    Each of n ranks independently pauses (GC, OS jitter) for d seconds with
    probability p per step; any pause stalls the whole synchronising group.
    Pauses of several ranks in the same step are assumed to overlap.

    Parameters
    ----------
    ranks : numeric
        Ranks in the synchronising group, n [1].
    probability : numeric
        Per-rank, per-step pause probability, p [1].
    duration_s : numeric
        Length of one pause, d [s].

    Returns
    -------
    numeric
        Expected extra time per step [s], between 0 and d.

    .. math:: \\Delta T = d \\left(1 - (1 - p)^n\\right)
    """
    return duration_s * (1 - (1 - probability) ** ranks)


LIN = ("Lin et al. 2025, Understanding Stragglers in Large Model Training Using What-if "
       "Analysis, OSDI'25, arXiv:2505.05713")
NARAYANAN = ("Narayanan et al. 2021, Megatron-LM on GPU clusters, SC21, arXiv:2104.04473, "
             "eq. (3) (FLOPs per layer and of the logit layer)")
_STRAG_SYM = {"step_time_s": "T", "gc_interval_s": "I_{gc}", "duration_s": "d",
              "interval_steps": "K", "vocab": "V", "hidden": "h", "seq_len": "s",
              "layers": "L", "stages": "p", "last_stage_extra_layers": "e",
              "microbatches": "m", "ranks": "n", "slow_fraction": "f", "slowdown": "S"}


@formula(reference="Poisson pauses on one rank: P(at least one in a step) = 1 - e^{-T/I}; "
         "unsynchronised Python GC as a straggler cause: " + LIN,
         domain={"step_time_s": ">=0", "gc_interval_s": ">0"}, symbols=_STRAG_SYM,
         result_latex="p_{gc}")
def gc_pause_probability(step_time_s, gc_interval_s):
    """Per-rank, per-step probability of a garbage-collection pause.

    Each rank's collector runs at random times (a Poisson process, mean gap
    I); the probability that a step of length T contains at least one run.
    Feed it to :func:`pause_delay` for the group's expected delay.

    Parameters
    ----------
    step_time_s : numeric
        Step time, T [s].
    gc_interval_s : numeric
        Mean time between collections on one rank, I_gc [s].

    Returns
    -------
    numeric
        Pause probability per rank and step [1].

    Examples
    --------
    >>> round(gc_pause_probability(2.0, 60.0), 5)  # 2 s steps, a GC a minute
    0.03278

    .. math:: p_{gc} = 1 - e^{-T / I_{gc}}
    """
    return 1 - exp(-step_time_s / gc_interval_s)


@formula(reference="n independent Poisson pause processes (mean gap I each) merge into one of "
         "mean gap I/n, so P(any rank pauses in a step of length T) = 1 - e^{-nT/I}; "
         "unsynchronised Python GC as a straggler cause: " + LIN,
         domain={"ranks": ">=1", "step_time_s": ">=0", "gc_interval_s": ">0",
                 "duration_s": ">=0"}, symbols=_STRAG_SYM, result_latex=r"\Delta T_{gc}")
def gc_pause_delay(ranks, step_time_s, gc_interval_s, duration_s):
    """Expected extra step time from unsynchronised garbage collection on n ranks.

    :func:`pause_delay` with :func:`gc_pause_probability`, in one exponential:
    d (1 - (1 - p_gc)^n) with p_gc = 1 - e^{-T/I} is d (1 - e^{-nT/I}), the
    probability that the merged collections of the n ranks fall in the step;
    computed as -expm1(-nT/I), exact to rounding where nT/I is small (the two-step
    form loses digits to 1 - e^{-T/I} there).

    Parameters
    ----------
    ranks : numeric
        Ranks in the synchronising group, n [1].
    step_time_s : numeric
        Step time, T [s].
    gc_interval_s : numeric
        Mean time between collections on one rank, I_gc [s].
    duration_s : numeric
        Length of one collection, d [s].

    Returns
    -------
    numeric
        Expected extra time per step [s], between 0 and d.

    Examples
    --------
    >>> round(gc_pause_delay(8, 2.0, 600.0, 0.5), 6)  # = pause_delay(8, p_gc, 0.5)
    0.013157

    .. math:: \\Delta T_{gc} = d \\left(1 - e^{-n T / I_{gc}}\\right)
    """
    return duration_s * -expm1(-ranks * step_time_s / gc_interval_s)


@formula(reference="Planned (synchronised) GC: every rank collects in the same step, every "
         "K steps; the fix measured in " + LIN,
         domain={"duration_s": ">=0", "interval_steps": ">=1"}, symbols=_STRAG_SYM,
         result_latex=r"\Delta T_{planned}")
def planned_gc_delay(duration_s, interval_steps):
    """Expected extra step time of planned garbage collection.

    All ranks collect together every K steps, so the pause costs its length
    once, not the group's maximum over ranks; compare :func:`pause_delay`
    with ``probability`` = 1/K.

    Parameters
    ----------
    duration_s : numeric
        Length of one collection, d [s].
    interval_steps : numeric
        Steps between planned collections, K [1].

    Returns
    -------
    numeric
        Extra time per step [s].

    Examples
    --------
    >>> planned_gc_delay(0.5, 50)
    0.01

    .. math:: \\Delta T_{planned} = d / K
    """
    return duration_s / interval_steps


@formula(reference=NARAYANAN + ": logit layer 6bshV vs 72bsh^2(1 + s/6h) per layer "
         "(forward + backward)",
         domain={"vocab": ">0", "hidden": ">0", "seq_len": ">=0"}, symbols=_STRAG_SYM,
         result_latex="e")
def lm_head_layer_equivalents(vocab, hidden, seq_len):
    """Work of the LM head (logit projection) in units of one transformer layer.

    The pipeline's last stage computes it on top of its layers.  FLOPs only;
    the softmax and loss, memory-bound, add to it.

    Parameters
    ----------
    vocab : numeric
        Vocabulary size, V [1].
    hidden : numeric
        Hidden size, h [1].
    seq_len : numeric
        Sequence length, s [1].

    Returns
    -------
    numeric
        LM-head work in transformer-layer equivalents [1].

    Examples
    --------
    >>> round(lm_head_layer_equivalents(128256, 4096, 8192), 3)  # Llama 3 8B shape
    1.957

    .. math:: e = \\frac{V}{12 h (1 + s / (6 h))}
    """
    return vocab / (12 * hidden * (1 + seq_len / (6 * hidden)))


@formula(reference="Pipeline flow: m micro-batches through stages of times t_i take "
         "sum t_i + (m - 1) max t_i (fill, steady state, drain; cf. GPipe, Huang et al. 2019, "
         "arXiv:1811.06965); last-stage imbalance in 39.3 % of straggling jobs: " + LIN,
         domain={"layers": ">0", "stages": ">=1", "last_stage_extra_layers": ">=0",
                 "microbatches": ">=1"},
         symbols=_STRAG_SYM, result_latex="S_{pp}")
def pipeline_imbalance_slowdown(layers, stages, last_stage_extra_layers, microbatches):
    """Step-time slowdown from a pipeline whose last stage carries extra work.

    L layers split evenly over p stages; the last stage also does e
    layer-equivalents (LM head, loss: :func:`lm_head_layer_equivalents`).
    The step takes sum t_i + (m - 1) max t_i; a balanced split of the same
    work takes (m + p - 1) mean t_i.  1 for p = 1, m = 1 or e = 0; tends to
    (L + p e)/(L + e) for many micro-batches.

    Parameters
    ----------
    layers : numeric
        Transformer layers, L [1].
    stages : numeric
        Pipeline stages, p [1].
    last_stage_extra_layers : numeric
        Extra work of the last stage in layer-equivalents, e [1].
    microbatches : numeric
        Micro-batches per step and pipeline, m [1].

    Returns
    -------
    numeric
        Slowdown over a balanced pipeline [1].

    Examples
    --------
    >>> round(pipeline_imbalance_slowdown(32, 4, 1.957, 64), 4)  # Llama 3 8B on 4 stages
    1.1626

    .. math:: S_{pp} = \\frac{p \\left(L + e + (m - 1)(L/p + e)\\right)}{(m + p - 1)(L + e)}
    """
    work = layers + last_stage_extra_layers
    return stages * (work + (microbatches - 1) * (layers / stages + last_stage_extra_layers)) \
        / ((microbatches + stages - 1) * work)


@formula(reference="Probability that a group of n contains a slow rank, 1-(1-f)^n; single "
         "slow hosts in production: Jiang et al. 2024 (MegaScale), arXiv:2402.15627 s6",
         domain={"ranks": ">=1", "slow_fraction": "[0,1]", "slowdown": ">=1"},
         symbols=_STRAG_SYM, result_latex=r"E[S_{slow}]")
def slow_node_slowdown(ranks, slow_fraction, slowdown):
    """Expected step-time factor from slow nodes in a synchronising group.

    Each rank is independently slow (thermal throttling, a degraded link)
    with probability f, by factor S; one slow rank holds the whole group.

    Parameters
    ----------
    ranks : numeric
        Ranks in the synchronising group, n [1].
    slow_fraction : numeric
        Share of ranks that are slow, f [1].
    slowdown : numeric
        Step-time factor of a slow rank, S [1].

    Returns
    -------
    numeric
        Expected slowdown of the group [1].

    Examples
    --------
    >>> round(slow_node_slowdown(16384, 1e-4, 1.1), 4)
    1.0806

    .. math:: E[S_{slow}] = 1 + (S - 1)\\left(1 - (1 - f)^n\\right)
    """
    return 1 + (slowdown - 1) * (1 - (1 - slow_fraction) ** ranks)


@formula(reference="Wasted share of GPU-hours of a job slowed down by S: " + LIN + " s3",
         domain={"slowdown": ">=1"}, symbols=_STRAG_SYM, result_latex="w_{strag}")
def straggler_waste_fraction(slowdown):
    """Share of a job's GPU-hours lost to stragglers.

    Parameters
    ----------
    slowdown : numeric
        Actual over straggler-free job time, S [1].

    Returns
    -------
    numeric
        Wasted share of GPU-hours [1].

    Examples
    --------
    >>> round(straggler_waste_fraction(1 / (1 - 0.45)), 12)  # 45 % waste is S = 1.82
    0.45

    .. math:: w_{strag} = 1 - 1/S
    """
    return 1 - 1 / slowdown
