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
from .ops import exp, maximum, minimum, sqrt, where

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


@formula(reference="Independent failure processes add their rates (superposition of Poisson "
         "processes); see Daly 2006 s2, " + DALY,
         domain={"mtbf_a_s": ">0", "mtbf_b_s": ">0"},
         symbols={"mtbf_a_s": "M_a", "mtbf_b_s": "M_b"}, result_latex="M")
def combined_mtbf(mtbf_a_s, mtbf_b_s):
    """Mean time between failures of two independent failure sources together.

    Parameters
    ----------
    mtbf_a_s : numeric
        MTBF of the first source (e.g. all GPUs of the job), M_a [s].
    mtbf_b_s : numeric
        MTBF of the second source (e.g. the rest of the nodes), M_b [s].

    Returns
    -------
    numeric
        MTBF of the job [s].

    Examples
    --------
    >>> combined_mtbf(3600.0, 7200.0)
    2400.0

    .. math:: M = \\frac{1}{1/M_a + 1/M_b}
    """
    return 1 / (1 / mtbf_a_s + 1 / mtbf_b_s)


@formula(reference="Aggregate parallel-file-system bandwidth scales with clients up to the "
         "servers' limit: Wang et al. 2023 (Gemini), doi:10.1145/3600006.3613145 s2; "
         "Eisenman et al. 2022 (Check-N-Run), NSDI'22",
         domain={"nodes": ">=1", "bandwidth_per_node_bytes_per_s": ">0",
                 "bandwidth_cap_bytes_per_s": ">0"},
         symbols={"nodes": "n", "bandwidth_per_node_bytes_per_s": "B_n",
                  "bandwidth_cap_bytes_per_s": "B_{max}"},
         result_latex="B")
def storage_bandwidth(nodes, bandwidth_per_node_bytes_per_s, bandwidth_cap_bytes_per_s):
    """Checkpoint bandwidth of a job: its nodes' clients, up to what storage sustains.

    Parameters
    ----------
    nodes : numeric
        Nodes writing (or reading) in parallel, n [1].
    bandwidth_per_node_bytes_per_s : numeric
        Bandwidth one node's client reaches, B_n [B/s].
    bandwidth_cap_bytes_per_s : numeric
        Aggregate bandwidth the storage system sustains, B_max [B/s].

    Returns
    -------
    numeric
        Aggregate bandwidth [B/s].

    Examples
    --------
    >>> storage_bandwidth(256, 2e9, 200e9)
    200000000000.0

    .. math:: B = \\min(n B_n, B_{max})
    """
    return minimum(nodes * bandwidth_per_node_bytes_per_s, bandwidth_cap_bytes_per_s)


@formula(reference="Synchronous: Young 1974 delta; asynchronous snapshot to host memory: Mohan "
         "et al. 2021 (CheckFreq, FAST'21); in-memory copy to a peer: Wang et al. 2023 "
         "(Gemini), doi:10.1145/3600006.3613145",
         domain={"write_s": ">=0", "host_copy_s": ">=0", "peer_copy_s": ">=0",
                 "synchronous": "[0,1]", "asynchronous": "[0,1]", "in_memory": "[0,1]"},
         symbols={"write_s": "t_w", "host_copy_s": "t_h", "peer_copy_s": "t_p",
                  "synchronous": "c_s", "asynchronous": "c_a", "in_memory": "c_m"},
         result_latex=r"\delta")
def checkpoint_stall_time(write_s, host_copy_s, peer_copy_s, synchronous, asynchronous,
                          in_memory):
    """Training time blocked by one checkpoint, by scheme (one of the flags is 1).

    Synchronous: the whole write to storage.  Asynchronous: the snapshot of the GPU's
    shard to host memory (the write drains in the background).  In-memory: the
    snapshot plus its copy to a peer node.

    Parameters
    ----------
    write_s : numeric
        Time to write the checkpoint to storage, t_w [s].
    host_copy_s : numeric
        Time to copy a GPU's shard to host memory, t_h [s].
    peer_copy_s : numeric
        Time to send a GPU's shard to a peer node, t_p [s].
    synchronous : numeric
        1 for synchronous checkpoints, c_s [1].
    asynchronous : numeric
        1 for asynchronous snapshots, c_a [1].
    in_memory : numeric
        1 for in-memory (peer) checkpoints, c_m [1].

    Returns
    -------
    numeric
        Blocking time per checkpoint [s].

    Examples
    --------
    >>> checkpoint_stall_time(60.0, 2.0, 3.0, 0, 0, 1)
    5.0

    .. math:: \\delta = c_s t_w + c_a t_h + c_m (t_h + t_p)
    """
    return synchronous * write_s + asynchronous * host_copy_s \
        + in_memory * (host_copy_s + peer_copy_s)


@formula(reference="Restart = detect/re-queue/warm-up + reload: Daly 2006 eq. (9) R, " + DALY
         + "; reload from a peer's memory: Wang et al. 2023 (Gemini), "
         "doi:10.1145/3600006.3613145",
         domain={"restart_overhead_s": ">=0", "read_s": ">=0", "peer_copy_s": ">=0",
                 "in_memory": "[0,1]"},
         symbols={"restart_overhead_s": "R_0", "read_s": "t_r", "peer_copy_s": "t_p",
                  "in_memory": "c_m"},
         result_latex="R")
def checkpoint_restart_time(restart_overhead_s, read_s, peer_copy_s, in_memory):
    """Time from a failure to training again: fixed overhead plus reloading the state.

    Parameters
    ----------
    restart_overhead_s : numeric
        Detect, re-queue and warm up, R_0 [s].
    read_s : numeric
        Time to read the checkpoint from storage, t_r [s].
    peer_copy_s : numeric
        Time to fetch a GPU's shard from a peer, t_p [s].
    in_memory : numeric
        1 if checkpoints are kept in peers' memory, c_m [1].

    Returns
    -------
    numeric
        Restart cost R [s].

    Examples
    --------
    >>> checkpoint_restart_time(600.0, 120.0, 3.0, 0)
    720.0

    .. math:: R = R_0 + (1 - c_m) t_r + c_m t_p
    """
    return restart_overhead_s + (1 - in_memory) * read_s + in_memory * peer_copy_s


@formula(reference="Mohan et al. 2021 (CheckFreq, FAST'21) (a snapshot waits until the "
         "previous checkpoint is persisted)",
         domain={"interval_s": ">=0", "write_s": ">=0", "asynchronous": "[0,1]"},
         symbols={"interval_s": r"\tau", "write_s": "t_w", "asynchronous": "c_a"},
         result_latex=r"\tau'")
def drained_checkpoint_interval(interval_s, write_s, asynchronous):
    """Checkpoint interval no shorter than an asynchronous write takes to drain.

    Parameters
    ----------
    interval_s : numeric
        Wanted interval (Young, Daly), tau [s].
    write_s : numeric
        Time to write a checkpoint to storage, t_w [s].
    asynchronous : numeric
        1 for asynchronous checkpoints, c_a [1].

    Returns
    -------
    numeric
        Interval used [s].

    Examples
    --------
    >>> drained_checkpoint_interval(300.0, 500.0, 1), drained_checkpoint_interval(300.0, 500.0, 0)
    (500.0, 300.0)

    .. math:: \\tau' = \\max(\\tau, c_a t_w)
    """
    return maximum(interval_s, asynchronous * write_s)


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
