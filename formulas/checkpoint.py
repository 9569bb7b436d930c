"""Checkpoint/restart: sizes, times, optimal intervals and expected waste.

Failures are a Poisson process with system mean time between failures M; a
checkpoint blocks training for delta seconds, a restart costs R seconds
(re-queue, reload, warm-up) before work resumes from the last checkpoint.

References
----------
.. [Young1974] J. W. Young, "A first order approximation to the optimum
   checkpoint interval", Commun. ACM 17(9):530-531, 1974. doi:10.1145/361147.361115
.. [Daly2006] J. T. Daly, "A higher order estimate of the optimum checkpoint
   interval for restart dumps", Future Gener. Comput. Syst. 22(3):303-312, 2006.
   doi:10.1016/j.future.2004.11.016
"""

from __future__ import annotations

from .core import formula
from .ops import exp, sqrt, where

YOUNG = "Young 1974, Commun. ACM 17(9):530, doi:10.1145/361147.361115"
DALY = "Daly 2006, FGCS 22(3):303-312, doi:10.1016/j.future.2004.11.016"

_SYM = {"checkpoint_cost_s": r"\delta", "mtbf_s": "M", "restart_cost_s": "R",
        "interval_s": r"\tau", "solve_time_s": "T_s"}


@formula(reference="Mixed-precision Adam state: Rajbhandari et al. 2020 (ZeRO), "
         "arXiv:1910.02054 s3.1 (2+2+12 bytes per parameter)",
         domain={"params": ">=0", "bytes_per_param": ">0"},
         symbols={"params": r"\Psi", "bytes_per_param": "K"}, result_latex="S_{ckpt}")
def checkpoint_size(params, bytes_per_param=14.0):
    """Size of a full training checkpoint.

    Weights plus optimizer state; the gradient is not saved.  The default
    14 B/param is bf16 weights (2) + fp32 master weights, momentum and variance
    (12) of mixed-precision Adam.

    Parameters
    ----------
    params : numeric
        Model parameters [1].
    bytes_per_param : numeric
        Checkpointed bytes per parameter [B].

    Returns
    -------
    numeric
        Checkpoint size [B].

    .. math:: S = \\Psi K
    """
    return params * bytes_per_param


@formula(reference="Transfer time size/bandwidth; e.g. Wang et al. 2023 (Gemini), "
         "doi:10.1145/3600006.3613145 s2",
         domain={"size_bytes": ">=0", "bandwidth_bytes_per_s": ">0"},
         symbols={"size_bytes": "S", "bandwidth_bytes_per_s": "B"}, result_latex=r"\delta")
def checkpoint_write_time(size_bytes, bandwidth_bytes_per_s):
    """Time to write (or read) a checkpoint at a sustained aggregate bandwidth.

    Parameters
    ----------
    size_bytes : numeric
        Checkpoint size [B].
    bandwidth_bytes_per_s : numeric
        Sustained aggregate write (or read) bandwidth [B/s].

    Returns
    -------
    numeric
        Transfer time [s].

    .. math:: \\delta = S / B
    """
    return size_bytes / bandwidth_bytes_per_s


@formula(reference="Failures of independent components add: system rate = count x "
         "component rate; see Daly 2006 s2, " + DALY,
         domain={"component_mtbf_s": ">0", "count": ">=1"},
         symbols={"component_mtbf_s": "M_c", "count": "n"}, result_latex="M")
def system_mtbf(component_mtbf_s, count):
    """Mean time between failures of a system of ``count`` independent components.

    Parameters
    ----------
    component_mtbf_s : numeric
        Mean time between failures of one component [s].
    count : numeric
        Number of components whose failure stops the job [1].

    Returns
    -------
    numeric
        System mean time between failures [s].

    .. math:: M = M_c / n
    """
    return component_mtbf_s / count


@formula(reference=YOUNG + ", eq. (5)", domain={"checkpoint_cost_s": ">0", "mtbf_s": ">0"},
         symbols=_SYM, result_latex=r"\tau_{Young}")
def young_interval(checkpoint_cost_s, mtbf_s):
    """Young's first-order optimum compute time between checkpoints.

    Minimises :func:`first_order_waste_fraction`; accurate while
    ``checkpoint_cost_s`` is much smaller than ``mtbf_s``.

    Parameters
    ----------
    checkpoint_cost_s : numeric
        Blocking time of one checkpoint, delta [s].
    mtbf_s : numeric
        System mean time between failures, M [s].

    Returns
    -------
    numeric
        Optimal checkpoint interval [s].

    .. math:: \\tau = \\sqrt{2 \\delta M}
    """
    return sqrt(2 * checkpoint_cost_s * mtbf_s)


@formula(reference=DALY + ", eq. (37)", domain={"checkpoint_cost_s": ">0", "mtbf_s": ">0"},
         symbols=_SYM, result_latex=r"\tau_{Daly}")
def daly_interval(checkpoint_cost_s, mtbf_s):
    """Daly's higher-order estimate of the optimum checkpoint interval.

    Parameters
    ----------
    checkpoint_cost_s : numeric
        Blocking time of one checkpoint, delta [s].
    mtbf_s : numeric
        System mean time between failures, M [s].

    Returns
    -------
    numeric
        Optimal checkpoint interval (compute time between checkpoints) [s];
        equals M when delta >= 2M.

    .. math::
        \\tau = \\sqrt{2\\delta M}\\left[1 + \\tfrac13\\sqrt{\\tfrac{\\delta}{2M}}
        + \\tfrac19 \\tfrac{\\delta}{2M}\\right] - \\delta \\quad (\\delta < 2M)
    """
    ratio = checkpoint_cost_s / (2 * mtbf_s)
    tau = sqrt(2 * checkpoint_cost_s * mtbf_s) * (1 + sqrt(ratio) / 3 + ratio / 9) \
        - checkpoint_cost_s
    return where(checkpoint_cost_s < 2 * mtbf_s, tau, mtbf_s)


@formula(reference=DALY + ", eq. (20) (complete model, exponential failures)",
         domain={"solve_time_s": ">=0", "interval_s": ">0", "checkpoint_cost_s": ">=0",
                 "restart_cost_s": ">=0", "mtbf_s": ">0"},
         symbols=_SYM, result_latex="T_w")
def daly_wall_time(solve_time_s, interval_s, checkpoint_cost_s, restart_cost_s, mtbf_s):
    """Expected wall time of a job under exponential failures (Daly's complete model).

    Includes checkpoint stalls, re-computation of work lost since the last
    checkpoint and restart costs; failures may also strike during
    checkpoints and restarts.

    Parameters
    ----------
    solve_time_s : numeric
        Failure-free compute time of the job, T_s [s].
    interval_s : numeric
        Compute time between checkpoints, tau [s].
    checkpoint_cost_s : numeric
        Blocking time of one checkpoint, delta [s].
    restart_cost_s : numeric
        Time from a failure until work resumes, R [s].
    mtbf_s : numeric
        System mean time between failures, M [s].

    Returns
    -------
    numeric
        Expected wall-clock time [s].

    .. math:: T_w = M e^{R/M}\\left(e^{(\\tau+\\delta)/M} - 1\\right) \\frac{T_s}{\\tau}
    """
    return mtbf_s * exp(restart_cost_s / mtbf_s) * (
        exp((interval_s + checkpoint_cost_s) / mtbf_s) - 1) * solve_time_s / interval_s


@formula(reference=YOUNG + "; restart term as in " + DALY + " eq. (9)",
         domain={"interval_s": ">0", "checkpoint_cost_s": ">=0", "restart_cost_s": ">=0",
                 "mtbf_s": ">0"},
         symbols=_SYM, result_latex="w_1")
def first_order_waste_fraction(interval_s, checkpoint_cost_s, restart_cost_s, mtbf_s):
    """First-order fraction of compute time wasted on checkpoints and failures.

    Checkpoint stalls cost delta per tau of work; each failure (rate 1/M)
    loses on average half an interval of work plus the restart.  Minimised
    over tau by :func:`young_interval`.

    Parameters
    ----------
    interval_s : numeric
        Compute time between checkpoints, tau [s].
    checkpoint_cost_s : numeric
        Blocking time of one checkpoint, delta [s].
    restart_cost_s : numeric
        Time from a failure until work resumes, R [s].
    mtbf_s : numeric
        System mean time between failures, M [s].

    Returns
    -------
    numeric
        Wasted time per unit of useful compute time [1].

    .. math:: w = \\frac{\\delta}{\\tau} + \\frac{\\tau}{2M} + \\frac{R}{M}
    """
    return checkpoint_cost_s / interval_s + interval_s / (2 * mtbf_s) + restart_cost_s / mtbf_s


@formula(reference=DALY + ", eq. (20)",
         domain={"interval_s": ">0", "checkpoint_cost_s": ">=0", "restart_cost_s": ">=0",
                 "mtbf_s": ">0"},
         symbols=_SYM, result_latex="w")
def daly_waste_fraction(interval_s, checkpoint_cost_s, restart_cost_s, mtbf_s):
    """Fraction of wall time not spent on useful work, Daly's complete model.

    Parameters
    ----------
    interval_s : numeric
        Compute time between checkpoints, tau [s].
    checkpoint_cost_s : numeric
        Blocking time of one checkpoint, delta [s].
    restart_cost_s : numeric
        Time from a failure until work resumes, R [s].
    mtbf_s : numeric
        System mean time between failures, M [s].

    Returns
    -------
    numeric
        1 - T_s/T_w, the wasted share of wall time [1].

    .. math:: w = 1 - \\frac{\\tau}{M e^{R/M}(e^{(\\tau+\\delta)/M}-1)}
    """
    return 1 - interval_s / (mtbf_s * exp(restart_cost_s / mtbf_s)
                             * (exp((interval_s + checkpoint_cost_s) / mtbf_s) - 1))


@formula(reference="Expected count of a Poisson process, rate 1/M; " + DALY,
         domain={"wall_time_s": ">=0", "mtbf_s": ">0"},
         symbols={"wall_time_s": "T_w", "mtbf_s": "M"}, result_latex="N_f")
def expected_failures(wall_time_s, mtbf_s):
    """Expected number of failures during a job.

    Parameters
    ----------
    wall_time_s : numeric
        Wall-clock time exposed to failures [s].
    mtbf_s : numeric
        System mean time between failures [s].

    Returns
    -------
    numeric
        Expected failures [1].

    .. math:: N_f = T_w / M
    """
    return wall_time_s / mtbf_s


@formula(reference=DALY + " (the complete model's attempts: geometric, success probability "
         "e^{-(tau+delta)/M}; each spends M(1 - e^{-tau/M}) computing)",
         domain={"solve_time_s": ">=0", "interval_s": ">0", "checkpoint_cost_s": ">=0",
                 "mtbf_s": ">0"},
         symbols=_SYM, result_latex="T_c")
def daly_compute_time(solve_time_s, interval_s, checkpoint_cost_s, mtbf_s):
    """Expected time spent computing, including work later lost to failures.

    In Daly's complete model a segment of tau compute plus a delta checkpoint is
    retried until it completes without a failure; every attempt computes until
    the failure or for tau.  The GPUs are busy for this time and idle in
    checkpoints and restarts.

    Parameters
    ----------
    solve_time_s : numeric
        Failure-free compute time of the job, T_s [s].
    interval_s : numeric
        Compute time between checkpoints, tau [s].
    checkpoint_cost_s : numeric
        Blocking time of one checkpoint, delta [s].
    mtbf_s : numeric
        System mean time between failures, M [s].

    Returns
    -------
    numeric
        Expected compute time including lost work [s]; equals T_s when M is large.

    .. math:: T_c = \\frac{T_s}{\\tau} M \\left(e^{(\\tau+\\delta)/M} - e^{\\delta/M}\\right)
    """
    return solve_time_s / interval_s * mtbf_s * (
        exp((interval_s + checkpoint_cost_s) / mtbf_s) - exp(checkpoint_cost_s / mtbf_s))
