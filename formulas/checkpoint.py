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
.. [GoCkpt2025] K. Zhang, Y. Chen, Z. Hu, W. Lin, J. Xu, W. Chen, "GoCkpt:
   Gradient-Assisted Multi-Step overlapped Checkpointing for Efficient LLM
   Training", arXiv:2511.07035, 2025.

Gradient-assisted multi-step checkpointing (GoCkpt)
---------------------------------------------------
An asynchronous snapshot copies the whole device state S (weights and
optimizer state) to host memory before the next optimizer update may change
it; what the host link B cannot move inside the step's overlap window W
stalls the GPU.  GoCkpt spreads the copy over k steps: in step j it copies a
part f_j S of the state, plus the gradient (G bytes for the whole model) of
the previous step for the parts already on the host, and the host applies
those gradients so that every part reaches the version the last part was
copied at.  Choosing the parts so that every step carries the same traffic L
(f_1 S = L, f_j S + G (f_1 + ... + f_{j-1}) = L, sum f_j = 1) gives
L = G / (1 - (1 - G/S)^k) (:func:`gockpt_step_bytes`); k = 1 is the async
snapshot.  The formulas below are this reading of the paper's abstract and
method summary (the transfer split, the CPU-side update to one consistent
version, the bandwidth-balancing "transfer optimization"); the paper's own
equations and figures were not available to this derivation, see
docs/model.md.
"""

from __future__ import annotations

from .core import formula
from .ops import ceil, exp, log, maximum, minimum, sqrt, where

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
         "previous checkpoint is persisted; its frequency is a whole number of iterations, "
         "so checkpoints are at least one step apart)",
         domain={"interval_s": ">=0", "write_s": ">=0", "asynchronous": "[0,1]",
                 "step_time_s": ">=0"},
         symbols={"interval_s": r"\tau", "write_s": "t_w", "asynchronous": "c_a",
                  "step_time_s": "t_s"},
         result_latex=r"\tau'")
def drained_checkpoint_interval(interval_s, write_s, asynchronous, step_time_s):
    """Checkpoint interval no shorter than one step nor than an asynchronous write takes
    to drain.

    A checkpoint is taken between training steps, so two checkpoints are at least one
    step apart however short the wanted interval (a Daly interval below the step time:
    one checkpoint per step).

    Parameters
    ----------
    interval_s : numeric
        Wanted interval (Young, Daly), tau [s].
    write_s : numeric
        Time a checkpoint takes before the next may start, t_w [s]: its stall and then
        its write to persistent storage (an asynchronous write draining).
    asynchronous : numeric
        1 where that time bounds the interval, c_a [1].
    step_time_s : numeric
        Time of one training step, t_s [s].

    Returns
    -------
    numeric
        Interval used [s].

    Examples
    --------
    >>> drained_checkpoint_interval(300.0, 500.0, 1, 10.0)
    500.0
    >>> drained_checkpoint_interval(300.0, 500.0, 0, 10.0)
    300.0
    >>> drained_checkpoint_interval(165.0, 0.2, 1, 279.0)
    279.0

    .. math:: \\tau' = \\max(\\tau, t_s, c_a t_w)
    """
    # unsimplified: the arguments may hold the step time (GoCkpt's k steps)
    return maximum(maximum(interval_s, step_time_s, simplify=False), asynchronous * write_s,
                   simplify=False)


@formula(reference="A user-fixed interval in place of the optimum: " + DALY + ", s3 "
         "(the waste of any interval tau follows eq. (20))",
         domain={"optimal_interval_s": ">0", "fixed_interval_s": ">=0"},
         symbols={"optimal_interval_s": r"\tau_{opt}", "fixed_interval_s": r"\tau_f"},
         result_latex=r"\tau")
def chosen_checkpoint_interval(optimal_interval_s, fixed_interval_s):
    """The checkpoint interval used: the one the user fixed, else the optimum.

    Parameters
    ----------
    optimal_interval_s : numeric
        Optimal interval (Daly), tau_opt [s].
    fixed_interval_s : numeric
        Interval the user fixed, 0 for none, tau_f [s].

    Returns
    -------
    numeric
        Interval wanted [s] (before :func:`drained_checkpoint_interval`).

    Examples
    --------
    >>> chosen_checkpoint_interval(300.0, 0.0)
    300.0
    >>> chosen_checkpoint_interval(300.0, 3600.0)
    3600.0

    .. math:: \tau = \tau_f \text{ if } \tau_f > 0 \text{ else } \tau_{opt}
    """
    return where(fixed_interval_s > 0, fixed_interval_s, optimal_interval_s)


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


GOCKPT = ("Zhang et al. 2025, GoCkpt, arXiv:2511.07035 (multi-step transfer of state parts "
          "plus gradients, CPU-side update to one consistent version)")
_GO_SYM = {"state_bytes": "S", "gradient_bytes": "G", "steps": "k",
           "host_bandwidth_bytes_per_s": "B_h", "overlap_window_s": "W",
           "size_bytes": "S", "step_time_s": "T", "persist_s": "P",
           "interval_s": r"\tau", "commit_latency_s": "L_c",
           "base_stall_s": r"\delta_0", "new_stall_s": r"\delta_1"}


@formula(reference="Device-to-host snapshot overlapped with the next step's forward and "
         "backward pass (CheckFreq, Mohan et al. 2021, FAST'21, usenix.org/conference/fast21; "
         "the async baseline of " + GOCKPT + ")",
         domain={"size_bytes": ">=0", "host_bandwidth_bytes_per_s": ">0",
                 "overlap_window_s": ">=0"},
         symbols=_GO_SYM, result_latex=r"\delta_{async}")
def async_snapshot_stall(size_bytes, host_bandwidth_bytes_per_s, overlap_window_s):
    """GPU stall of one asynchronous snapshot of the state to host memory.

    The copy runs while the next step computes, but must end before that
    step's optimizer update changes the state; what does not fit in the
    overlap window stalls the GPU.  With no overlap (W = 0) this is the whole
    copy time S/B, capplan's ``async`` scheme.

    Parameters
    ----------
    size_bytes : numeric
        Device state to copy per GPU (weights and optimizer state), S [B].
    host_bandwidth_bytes_per_s : numeric
        Device-to-host bandwidth per GPU (PCIe / C2C), B_h [B/s].
    overlap_window_s : numeric
        Time per step during which the copy runs without delaying compute, W [s].

    Returns
    -------
    numeric
        Stall per checkpoint [s].

    Examples
    --------
    >>> async_snapshot_stall(40e9, 25e9, 0.5)  # 40 GB over 25 GB/s, 0.5 s hidden
    1.1

    .. math:: \\delta_{async} = \\max\\left(0, \\frac{S}{B_h} - W\\right)
    """
    return maximum(size_bytes / host_bandwidth_bytes_per_s - overlap_window_s, 0)


@formula(reference=GOCKPT + "; equal per-step traffic (its bandwidth-balancing transfer "
         "optimization) solved in closed form here",
         domain={"state_bytes": ">0", "gradient_bytes": ">0", "steps": ">=1"},
         symbols=_GO_SYM, result_latex="L_k")
def gockpt_step_bytes(state_bytes, gradient_bytes, steps):
    """Host-link traffic per step of a GoCkpt checkpoint spread over k steps.

    Step j copies a part f_j of the state and the previous step's gradient of
    the parts already on the host; equal traffic L in every step gives
    f_1 S = L and F_j = F_{j-1} (1 - G/S) + L/S for the copied share F_j, so
    F_k = 1 yields the closed form below.  k = 1 gives S (an async snapshot);
    large k tends to G (the whole gradient every step).  Valid for G < S
    (G/S is capped at 1, where L = G).

    Parameters
    ----------
    state_bytes : numeric
        Checkpointed device state per GPU, S [B].
    gradient_bytes : numeric
        Gradient of the same parameters per GPU and step, G [B].
    steps : numeric
        Steps the checkpoint is spread over, k [1].

    Returns
    -------
    numeric
        Bytes over the host link in each of the k steps [B].

    Examples
    --------
    >>> round(gockpt_step_bytes(14.0, 2.0, 1), 12)  # 14 B/param state, 2 B/param bf16 grads
    14.0
    >>> round(gockpt_step_bytes(14.0, 2.0, 4), 4)
    4.3457

    .. math:: L_k = \\frac{G}{1 - \\left(1 - \\min(G/S, 1)\\right)^{k}}
    """
    return gradient_bytes / (1 - (1 - minimum(gradient_bytes / state_bytes, 1)) ** steps)


@formula(reference=GOCKPT + "; total traffic k L_k minus the state",
         domain={"state_bytes": ">0", "gradient_bytes": ">0", "steps": ">=1"},
         symbols=_GO_SYM, result_latex=r"\Delta V")
def gockpt_extra_bytes(state_bytes, gradient_bytes, steps):
    """Extra host-link traffic of one GoCkpt checkpoint over an async snapshot.

    The gradients sent to bring earlier parts to the final version:
    k L_k - S; zero for k = 1, about (k - 1) G / 2 while k G << S.

    Parameters
    ----------
    state_bytes : numeric
        Checkpointed device state per GPU, S [B].
    gradient_bytes : numeric
        Gradient per GPU and step, G [B].
    steps : numeric
        Steps the checkpoint is spread over, k [1].

    Returns
    -------
    numeric
        Extra bytes per GPU and checkpoint [B].

    Examples
    --------
    >>> round(gockpt_extra_bytes(14.0, 2.0, 4), 4)
    3.3828

    .. math:: \\Delta V = k L_k - S
    """
    return steps * gockpt_step_bytes.func(state_bytes, gradient_bytes, steps) - state_bytes


@formula(reference=GOCKPT + "; per-step overlap as in the async snapshot",
         domain={"state_bytes": ">0", "gradient_bytes": ">0", "steps": ">=1",
                 "host_bandwidth_bytes_per_s": ">0", "overlap_window_s": ">=0"},
         symbols=_GO_SYM, result_latex=r"\delta_{GoCkpt}")
def gockpt_stall(state_bytes, gradient_bytes, steps, host_bandwidth_bytes_per_s,
                 overlap_window_s):
    """GPU stall of one GoCkpt checkpoint spread over k steps.

    Each of the k steps moves L_k bytes (:func:`gockpt_step_bytes`); what does
    not fit in the step's overlap window stalls it.  k = 1 is
    :func:`async_snapshot_stall`.  Zero once L_k <= W B_h
    (:func:`gockpt_min_steps`).

    Parameters
    ----------
    state_bytes : numeric
        Checkpointed device state per GPU, S [B].
    gradient_bytes : numeric
        Gradient per GPU and step, G [B].
    steps : numeric
        Steps the checkpoint is spread over, k [1].
    host_bandwidth_bytes_per_s : numeric
        Device-to-host bandwidth per GPU, B_h [B/s].
    overlap_window_s : numeric
        Time per step during which transfers do not delay compute, W [s].

    Returns
    -------
    numeric
        Stall per checkpoint [s].

    Examples
    --------
    >>> round(gockpt_stall(40e9, 40e9 / 7, 1, 25e9, 0.5), 12)  # = the async snapshot stall
    1.1
    >>> round(gockpt_stall(40e9, 40e9 / 7, 3, 25e9, 0.5), 4)
    0.352
    >>> gockpt_stall(40e9, 40e9 / 7, 4, 25e9, 0.5)
    0.0

    .. math:: \\delta_{GoCkpt} = k \\max\\left(0, \\frac{L_k}{B_h} - W\\right)
    """
    per_step = gockpt_step_bytes.func(state_bytes, gradient_bytes, steps)
    # unsimplified: the window holds the run model's step time
    return steps * maximum(per_step / host_bandwidth_bytes_per_s - overlap_window_s, 0,
                           simplify=False)


@formula(reference=GOCKPT + "; L_k = W B_h solved for k",
         domain={"state_bytes": ">0", "gradient_bytes": ">0",
                 "host_bandwidth_bytes_per_s": ">0", "overlap_window_s": ">0"},
         symbols=_GO_SYM, result_latex="k^*")
def gockpt_min_steps(state_bytes, gradient_bytes, host_bandwidth_bytes_per_s,
                     overlap_window_s):
    """Fewest steps (real-valued; round up) that hide a GoCkpt checkpoint entirely.

    Solves L_k = W B_h.  1 when one window already holds the whole state
    (S <= W B_h); infinite when W B_h = G and NaN below: then even the gradient of one step
    does not fit in a window and no k hides the checkpoint.  Valid for G < S.

    Parameters
    ----------
    state_bytes : numeric
        Checkpointed device state per GPU, S [B].
    gradient_bytes : numeric
        Gradient per GPU and step, G [B].
    host_bandwidth_bytes_per_s : numeric
        Device-to-host bandwidth per GPU, B_h [B/s].
    overlap_window_s : numeric
        Time per step during which transfers do not delay compute, W [s].

    Returns
    -------
    numeric
        Steps k* [1].

    Examples
    --------
    >>> round(gockpt_min_steps(40e9, 40e9 / 7, 25e9, 0.5), 3)  # k = 4 hides it
    3.963

    .. math:: k^* = \\max\\left(1, \\frac{\\ln(1 - G/(W B_h))}{\\ln(1 - G/S)}\\right)
        \\quad (k^* = 1 \\text{ if } W B_h \\ge S)
    """
    window_bytes = overlap_window_s * host_bandwidth_bytes_per_s
    return where(window_bytes >= state_bytes, 1,
                 maximum(log(1 - gradient_bytes / window_bytes)
                         / log(1 - gradient_bytes / state_bytes), 1))


@formula(reference=GOCKPT + " (a checkpoint is complete after its k transfer steps and "
         "persistence to SSD/storage)",
         domain={"steps": ">=1", "step_time_s": ">0", "persist_s": ">=0"},
         symbols=_GO_SYM, result_latex=r"\tau_{min}")
def gockpt_min_interval(steps, step_time_s, persist_s):
    """Shortest time between the starts of two GoCkpt checkpoints.

    The next checkpoint may start only when the previous one has been moved
    (k steps) and written from host memory to storage (one host buffer).
    k = 1 is the async snapshot's drain constraint.

    Parameters
    ----------
    steps : numeric
        Steps the checkpoint is spread over, k [1].
    step_time_s : numeric
        Training step time, T [s].
    persist_s : numeric
        Time to persist the host copy to storage (and finish the host-side
        update), P [s].

    Returns
    -------
    numeric
        Minimum checkpoint interval [s].

    Examples
    --------
    >>> gockpt_min_interval(4, 10.0, 60.0)
    100.0

    .. math:: \\tau_{min} = k T + P
    """
    return steps * step_time_s + persist_s


@formula(reference="Failures uniform over the interval; a checkpoint counts only once "
         "committed; cf. Daly 2006 s3, " + DALY,
         domain={"interval_s": ">0", "commit_latency_s": ">=0"},
         symbols=_GO_SYM, result_latex=r"E[W_{lost}]")
def expected_lost_work(interval_s, commit_latency_s):
    """Expected work a failure rolls back when checkpoints commit with a delay.

    A checkpoint captures the state of one moment but protects the run only
    once it is committed (copied, made consistent and persisted), L_c later.
    A failure at a uniform time in the interval loses the time since the
    capture, plus a whole interval if it strikes before the commit.  Valid
    for L_c <= tau.  Async snapshot: L_c = S/B_h + P.  GoCkpt: the
    consistent version is that of its last part, captured one step before
    the transfer ends, so L_c = T + P (plus the host-side update).  To first
    order the latency acts as extra restart cost: the waste is
    :func:`first_order_waste_fraction` with R + L_c in place of R (Young's
    interval is unchanged); :func:`daly_wall_time_committed` is exact.

    Parameters
    ----------
    interval_s : numeric
        Time between checkpoint captures, tau [s].
    commit_latency_s : numeric
        Time from capture to commit, L_c [s].

    Returns
    -------
    numeric
        Expected lost work per failure [s].

    Examples
    --------
    >>> expected_lost_work(1800.0, 70.0)
    970.0

    .. math:: E[W_{lost}] = \\frac{\\tau}{2} + L_c
    """
    return interval_s / 2 + commit_latency_s


@formula(reference="Throughput ratio of two checkpoint schemes at the same interval; "
         "the comparison reported by " + GOCKPT,
         domain={"interval_s": ">0", "base_stall_s": ">=0", "new_stall_s": ">=0"},
         symbols=_GO_SYM, result_latex=r"\Delta X")
def stall_throughput_gain(interval_s, base_stall_s, new_stall_s):
    """Relative throughput gain from cutting the checkpoint stall.

    With tau of compute per checkpoint, throughput is proportional to
    1/(tau + delta).

    Parameters
    ----------
    interval_s : numeric
        Compute time between checkpoints, tau [s].
    base_stall_s : numeric
        Stall per checkpoint of the baseline scheme, delta_0 [s].
    new_stall_s : numeric
        Stall per checkpoint of the new scheme, delta_1 [s].

    Returns
    -------
    numeric
        Throughput gain, new over baseline, minus one [1].

    Examples
    --------
    >>> round(stall_throughput_gain(10.0, 1.1, 0.0), 3)
    0.11

    .. math:: \\Delta X = \\frac{\\tau + \\delta_0}{\\tau + \\delta_1} - 1
    """
    return (interval_s + base_stall_s) / (interval_s + new_stall_s) - 1


@formula(reference=DALY + ", eq. (20) extended here to checkpoints that commit L_c after "
         "capture (async snapshots, " + GOCKPT + ")",
         domain={"solve_time_s": ">=0", "interval_s": ">0", "checkpoint_cost_s": ">=0",
                 "restart_cost_s": ">=0", "mtbf_s": ">0", "commit_latency_s": ">=0"},
         symbols={**_SYM, "commit_latency_s": "L_c"}, result_latex="T_{w,c}")
def daly_wall_time_committed(solve_time_s, interval_s, checkpoint_cost_s, restart_cost_s,
                             mtbf_s, commit_latency_s):
    """Expected wall time until the last checkpoint commits, with a commit latency.

    Daly's complete model (exponential failures, restarts exposed to
    failures) where a checkpoint protects the run only L_c after the end of
    its segment (copy, consistency update, persistence), while the next
    segment already computes.  From one commit the next needs tau + delta
    failure-free time; after a failure it needs tau + delta + L_c from the
    last committed segment.  Solving the two renewal equations: every segment
    costs Daly's time times e^{L_c/M}, and the first commit adds
    M e^{R/M}(e^{L_c/M} - 1).  Equals :func:`daly_wall_time` at L_c = 0.
    Valid for L_c <= tau + delta (one checkpoint pending at a time).

    Parameters
    ----------
    solve_time_s : numeric
        Failure-free compute time of the job, a whole number of intervals, T_s [s].
    interval_s : numeric
        Compute time between checkpoints, tau [s].
    checkpoint_cost_s : numeric
        Blocking time of one checkpoint, delta [s].
    restart_cost_s : numeric
        Time from a failure until work resumes, R [s].
    mtbf_s : numeric
        System mean time between failures, M [s].
    commit_latency_s : numeric
        Time from the end of a segment until its checkpoint protects the run, L_c [s].

    Returns
    -------
    numeric
        Expected wall-clock time until the final checkpoint commits [s].

    Examples
    --------
    >>> round(daly_wall_time_committed(36000.0, 600.0, 60.0, 120.0, 3600.0, 0.0), 1)
    44935.5
    >>> round(daly_wall_time_committed(36000.0, 600.0, 60.0, 120.0, 3600.0, 300.0), 1)
    49164.1

    .. math:: T_{w,c} = M e^{R/M}\\left[e^{L_c/M}\\left(e^{(\\tau+\\delta)/M} - 1\\right)
        \\frac{T_s}{\\tau} + e^{L_c/M} - 1\\right]
    """
    latency = exp(commit_latency_s / mtbf_s)
    return mtbf_s * exp(restart_cost_s / mtbf_s) * (
        latency * (exp((interval_s + checkpoint_cost_s) / mtbf_s) - 1)
        * solve_time_s / interval_s + latency - 1)


@formula(reference=GOCKPT + "; k = ceil(k*) of gockpt_min_steps, at most the stack's limit",
         domain={"state_bytes": ">0", "gradient_bytes": ">0",
                 "host_bandwidth_bytes_per_s": ">0", "overlap_window_s": ">=0",
                 "max_steps": ">=1"},
         symbols={**_GO_SYM, "max_steps": "k_{max}"}, result_latex="k")
def gockpt_steps(state_bytes, gradient_bytes, host_bandwidth_bytes_per_s, overlap_window_s,
                 max_steps):
    """Steps a GoCkpt checkpoint is spread over: the fewest that hide it, at most k_max.

    The whole number of steps at or above :func:`gockpt_min_steps`; k_max where no k
    hides the checkpoint (the gradient of one step alone overflows a step's window,
    G >= W B_h) or more steps than k_max would be needed.

    Parameters
    ----------
    state_bytes : numeric
        Checkpointed device state per GPU, S [B].
    gradient_bytes : numeric
        Gradient per GPU and step, G [B].
    host_bandwidth_bytes_per_s : numeric
        Device-to-host bandwidth per GPU, B_h [B/s].
    overlap_window_s : numeric
        Time per step during which transfers do not delay compute, W [s].
    max_steps : numeric
        Most steps one checkpoint may be spread over, k_max [1].

    Returns
    -------
    numeric
        Steps k [1].

    Examples
    --------
    >>> float(gockpt_steps(40e9, 40e9 / 7, 25e9, 0.5, 16))  # k* = 3.96
    4.0
    >>> float(gockpt_steps(40e9, 40e9 / 7, 25e9, 0.1, 16))  # G > W B_h: not hideable
    16.0

    .. math:: k = \\min\\left(k_{max}, \\lceil k^* \\rceil\\right),
        \\quad k^* = \\frac{\\ln(1 - G/(W B_h))}{\\ln(1 - G/S)}
    """
    window_bytes = overlap_window_s * host_bandwidth_bytes_per_s
    # G / (W B_h) clamped at 1 - 1e-12 (a spreadsheet's subtraction snaps closer values to
    # 0): where no k hides the checkpoint, k* >= 27.6 / -ln(1 - G/S), above k_max for any
    # G <= 0.9 S and k_max <= 12; where one window holds the state (W B_h >= S) k* <= 1
    # unsimplified Min, Max and ceiling: the window holds the run model's step time
    fits = minimum(gradient_bytes / maximum(window_bytes, 1e-300, simplify=False),
                   1 - 1e-12, simplify=False)
    needed = log(1 - fits) / log(1 - minimum(gradient_bytes / state_bytes, 1 - 1e-12))
    return minimum(maximum(ceil(needed, simplify=False), 1, simplify=False), max_steps,
                   simplify=False)


@formula(reference="Async snapshot: persisted after the background write, Mohan et al. 2021 "
         "(CheckFreq, FAST'21); " + GOCKPT + " (consistent after the last part's step and "
         "the host-side update, then persisted)",
         domain={"write_s": ">=0", "step_time_s": ">=0", "asynchronous": "[0,1]",
                 "gockpt": "[0,1]"},
         symbols={"write_s": "t_w", "step_time_s": "T", "asynchronous": "c_a",
                  "gockpt": "c_g"}, result_latex="L_c")
def checkpoint_commit_latency(write_s, step_time_s, asynchronous, gockpt):
    """Time from a checkpoint's capture until it protects the run, by scheme.

    Synchronous and in-memory checkpoints protect the run when the stall ends (0).
    An async snapshot is persisted by a background write, t_w later; a GoCkpt
    checkpoint is consistent one step after its capture (its last part and the
    host-side update) and then persisted.

    Parameters
    ----------
    write_s : numeric
        Time to persist the checkpoint to storage, t_w [s].
    step_time_s : numeric
        Training step time, T [s].
    asynchronous : numeric
        1 for asynchronous snapshots, c_a [1].
    gockpt : numeric
        1 for GoCkpt, c_g [1].

    Returns
    -------
    numeric
        Commit latency [s].

    Examples
    --------
    >>> checkpoint_commit_latency(60.0, 10.0, 0, 1)
    70.0

    .. math:: L_c = c_a t_w + c_g (T + t_w)
    """
    return asynchronous * write_s + gockpt * (step_time_s + write_s)
