"""Failure domains and hot spares: rates by domain, restarts by swap or re-queue.

A synchronous job stops when any unit it spans fails.  Units come in nested
domains -- a GPU, its node, a rack or scale-up domain (an NVL72 rack is 18
nodes), a pod, and the job itself (software faults) -- each with its own rate,
detection time and restart cost.  A failure of a domain takes all its nodes
out at once.  With N hot-spare nodes the job swaps healthy spares in and
restarts at once (a *swap*); when too few spares are healthy it waits for
replacements (a *re-queue*).

Failures are Poisson per unit (the superposition over units and domains is
Poisson, rate the sum of the rates).  Spare availability: nodes leave for
repair at the domains' combined node-loss rate and return after a repair time,
so the number in repair has mean :func:`nodes_in_repair` (Little's law); a
failure finds the spare pool as at a random time (PASTA).  The count in
repair is a sum of Poisson batch counts (M/G/infinity), whose distribution
:func:`planner.analysis.simulate.repair_pool_pmf` computes by convolution;
the probability of a swap comes from it.

References
----------
.. [Daly2006] J. T. Daly, Future Gener. Comput. Syst. 22(3):303-312, 2006.
   doi:10.1016/j.future.2004.11.016
.. [Little1961] J. D. C. Little, "A proof for the queuing formula L = lambda W",
   Oper. Res. 9(3):383-387, 1961. doi:10.1287/opre.9.3.383
.. [Takacs1962] L. Takacs, "Introduction to the Theory of Queues", Oxford
   University Press, 1962 (M/G/infinity: Poisson number in service).
"""

from __future__ import annotations

from .core import formula
from .ops import ceil, exp, expm1, log1p, maximum, minimum, poisson_cdf, where

KOKOLIS = ("Kokolis et al. 2025, Revisiting Reliability in Large-Scale Machine Learning "
           "Research Clusters, HPCA'25, arXiv:2410.21680")
DALY = "Daly 2006, FGCS 22(3):303-312, doi:10.1016/j.future.2004.11.016"
LITTLE = "Little 1961, Oper. Res. 9(3):383, doi:10.1287/opre.9.3.383"

_SYM = {"gpus": "N", "gpus_per_unit": "g_d", "units": "n_d", "unit_mtbf_s": "M_d",
        "node_loss_rate_per_s": r"\Lambda_n", "repair_time_s": "T_r",
        "detection_s": "t_d", "swap_restart_s": "R_s", "requeue_restart_s": "R_q",
        "swap_probability": "p_s", "mtbf_s": "M", "job_nodes": "N_n", "spares": "N_s",
        "gpus_per_node": "g", "wall_time_s": "T_w", "nodes_lost": "n_l",
        "nodes": "n", "job_mtbf_s": "M_j", "internode_mtbf_s": "M_c",
        "node_exponent": r"\beta", "automatic_restart_s": "R_a",
        "manual_restart_s": "R_m", "manual_fraction": "p_m",
        "single_in_repair": r"\mu_1", "rack_in_repair": r"\mu_r", "rack_nodes": "m"}

#: Rack failures counted in :func:`pool_swap_probability` (the Poisson sum is cut after this).
RACK_TERMS = 12


@formula(reference="A job of N GPUs spans ceil(N/g) units of g GPUs; e.g. NVIDIA GB200 "
         "NVL72 datasheet (72 GPUs per rack-scale domain)",
         domain={"gpus": ">=1", "gpus_per_unit": ">=1"}, symbols=_SYM, result_latex="n_d")
def domain_units(gpus, gpus_per_unit):
    """Units of a failure domain that a job spans (nodes, racks, pods).

    Parameters
    ----------
    gpus : numeric
        GPUs of the job, N [1].
    gpus_per_unit : numeric
        GPUs in one unit of the domain (8 per HGX node, 72 per NVL72 rack), g_d [1].

    Returns
    -------
    numeric
        Units the job spans [1].

    Examples
    --------
    >>> domain_units(16384, 72)  # NVL72 racks for 16,384 GPUs
    228.0

    .. math:: n_d = \\lceil N / g_d \\rceil
    """
    return ceil(gpus / gpus_per_unit)


@formula(reference="Failures of independent units add (Poisson superposition); " + DALY,
         domain={"units": ">=0", "unit_mtbf_s": ">0"}, symbols=_SYM,
         result_latex=r"\lambda_d")
def domain_failure_rate(units, unit_mtbf_s):
    """Rate of job-stopping failures from one domain.

    Parameters
    ----------
    units : numeric
        Units of the domain the job spans, n_d [1].
    unit_mtbf_s : numeric
        Mean time between failures of one unit, M_d [s].

    Returns
    -------
    numeric
        Failure rate [1/s].

    Examples
    --------
    >>> round(domain_failure_rate(228, 3.0e8) * 86400, 4)  # failures per day
    0.0657

    .. math:: \\lambda_d = n_d / M_d
    """
    return units / unit_mtbf_s


@formula(reference="Job-wide software faults: a per-job term plus inter-node faults (NCCL "
         "hangs, collective timeouts) growing as a power of the nodes beyond the first; "
         "exponent fitted to the job MTTF at 8, 1,024 and 16,384 GPUs of " + KOKOLIS
         + "; Llama 3 Table 5, arXiv:2407.21783",
         domain={"nodes": ">0", "job_mtbf_s": ">0", "internode_mtbf_s": ">0",
                 "node_exponent": "(0,1]"}, symbols=_SYM, result_latex=r"\lambda_s")
def software_failure_rate(nodes, job_mtbf_s, internode_mtbf_s, node_exponent):
    """Rate of job-wide software faults of a job spanning ``nodes`` nodes.

    A job fails from its own code (user code, dependencies, data loaders) at a
    rate that does not depend on its size, 1/M_j, and from faults between its
    nodes (NCCL hangs and watchdog timeouts, collective errors) that a
    single-node job does not have and that grow with the nodes beyond the
    first as (n - 1)^beta.  beta < 1: a hang stops the whole job whichever
    rank triggers it, and Kokolis et al.'s job MTTF falls 145-fold from 8 to
    1,024 GPUs but only 4.4-fold from 1,024 to 16,384, which no rate linear in
    the nodes reproduces (the per-node hardware rate alone gives the 16,384-GPU
    point).  M_c is the mean time between such faults of a two-node job.

    Parameters
    ----------
    nodes : numeric
        Nodes of the job, n [1].
    job_mtbf_s : numeric
        Mean time between size-independent software faults of one job, M_j [s].
    internode_mtbf_s : numeric
        Mean time between inter-node software faults of a two-node job, M_c [s].
    node_exponent : numeric
        Growth of inter-node faults with the nodes beyond the first, beta [1].

    Returns
    -------
    numeric
        Software failure rate of the job [1/s].

    Examples
    --------
    >>> round(software_failure_rate(1, 5.973e6, 2.4e5, 0.3) * 3600, 6)  # one node: M_j only
    0.000603
    >>> round(1 / software_failure_rate(2048, 5.973e6, 7.387e5, 0.3) / 3600, 1)  # Llama 3
    20.6

    .. math:: \\lambda_s = \\frac{1}{M_j} + \\frac{\\max(n - 1, 0)^\\beta}{M_c}
    """
    return 1 / job_mtbf_s + maximum(nodes - 1, 0) ** node_exponent / internode_mtbf_s


@formula(reference="Little's law, " + LITTLE + "; Poisson count in repair for single-node "
         "losses: Takacs 1962, Introduction to the Theory of Queues (M/G/infinity)",
         domain={"node_loss_rate_per_s": ">=0", "repair_time_s": ">=0"}, symbols=_SYM,
         result_latex=r"\mu_r")
def nodes_in_repair(node_loss_rate_per_s, repair_time_s):
    """Mean number of nodes out for repair (or replacement) at a random time.

    Parameters
    ----------
    node_loss_rate_per_s : numeric
        Nodes taken out per second, sum over domains of rate x nodes lost,
        Lambda_n [1/s].
    repair_time_s : numeric
        Mean time until a failed node is healthy again, T_r [s].

    Returns
    -------
    numeric
        Mean nodes in repair [1].

    Examples
    --------
    >>> nodes_in_repair(2 / 86400, 4 * 3600.0)  # 2 nodes a day, 4 h repairs
    0.3333333333333333

    .. math:: \\mu_r = \\Lambda_n T_r
    """
    return node_loss_rate_per_s * repair_time_s


@formula(reference="Mean restart of a failure that is detected, then either swapped onto "
         "hot spares or re-queued; restart costs as in Kokolis et al. 2025, "
         "arXiv:2410.21680",
         domain={"detection_s": ">=0", "swap_restart_s": ">=0", "requeue_restart_s": ">=0",
                 "swap_probability": "[0,1]"},
         symbols=_SYM, result_latex=r"\bar R_d")
def domain_restart_cost(detection_s, swap_restart_s, requeue_restart_s, swap_probability):
    """Mean time from a failure until work resumes.

    Parameters
    ----------
    detection_s : numeric
        Time to detect the failure and stop the job, t_d [s].
    swap_restart_s : numeric
        Restart when healthy spares replace the lost nodes (reload,
        warm-up), R_s [s].
    requeue_restart_s : numeric
        Restart when the job must wait for replacement nodes, R_q [s].
    swap_probability : numeric
        Probability that enough spares are healthy, p_s [1].

    Returns
    -------
    numeric
        Mean restart cost [s].

    Examples
    --------
    >>> domain_restart_cost(60.0, 600.0, 7200.0, 0.9)
    1320.0

    .. math:: \\bar R_d = t_d + p_s R_s + (1 - p_s) R_q
    """
    return (detection_s + swap_probability * swap_restart_s
            + (1 - swap_probability) * requeue_restart_s)


@formula(reference=DALY + " eq. (20) (restart exposed to failures), with a restart cost "
         "that depends on the failure: E[e^{R/M}] replaces e^{R/M}",
         domain={"mtbf_s": ">0", "detection_s": ">=0", "swap_restart_s": ">=0",
                 "requeue_restart_s": ">=0", "swap_probability": "[0,1]"},
         symbols=_SYM, result_latex="R_d")
def effective_restart_cost(mtbf_s, detection_s, swap_restart_s, requeue_restart_s,
                           swap_probability):
    """Restart cost to use in Daly's complete model when restarts are swaps or re-queues.

    In Daly's model a restart is redone when a failure strikes it, and the
    restart cost enters as e^{R/M}.  If a failure's restart is R_s with
    probability p_s and R_q otherwise, and a failure during a restart starts
    the restart of the new failure, the expected time to resume is
    M (1/E[e^{-R/M}] - 1): the model holds with R_d = -M ln E[e^{-R/M}],
    computed as t_d + R_l - M ln(1 + w (e^{(R_l - R_short)/M} - 1)) with R_l the longer
    restart and w the probability of the shorter (log1p, expm1: no cancellation,
    exactly t_d + R_s when R_q = R_s).
    Between t_d + min(R_s, R_q) and the mean restart
    (:func:`domain_restart_cost`), below the mean because a long restart is
    the likelier to be cut short by a failure whose restart may be short;
    equal to the mean when M is much longer than both.  Needs |R_q - R_s|/M
    below ~700 (exp overflow).  Several domains combine the
    same way, with weights lambda_d / sum lambda.

    Parameters
    ----------
    mtbf_s : numeric
        System mean time between failures, M [s].
    detection_s : numeric
        Time to detect the failure, t_d [s].
    swap_restart_s : numeric
        Restart onto hot spares, R_s [s].
    requeue_restart_s : numeric
        Restart after waiting for replacement nodes, R_q [s].
    swap_probability : numeric
        Probability that enough spares are healthy, p_s [1].

    Returns
    -------
    numeric
        Effective restart cost R_d [s].

    Examples
    --------
    >>> round(effective_restart_cost(3 * 3600.0, 60.0, 600.0, 7200.0, 0.9), 1)  # mean 1320
    1165.5

    .. math:: R_d = t_d - M \\ln\\left(p_s e^{-R_s/M} + (1 - p_s) e^{-R_q/M}\\right)
    """
    # -M ln(p e^{-R_s/M} + (1-p) e^{-R_q/M}) shifted by the longer restart R_l:
    # R_l - M ln(1 + w (e^{(R_l - R_short)/M} - 1)), w the shorter one's probability; the
    # log1p argument is >= 0 (no cancellation), exactly t_d + R when R_s = R_q
    longer = maximum(swap_restart_s, requeue_restart_s)
    gap = longer - minimum(swap_restart_s, requeue_restart_s)
    shorter_weight = where(swap_restart_s <= requeue_restart_s, swap_probability,
                           1 - swap_probability)
    return detection_s + longer - mtbf_s * log1p(shorter_weight * expm1(gap / mtbf_s))


@formula(reference=DALY + " eq. (20) with E[e^{-R/M}] over automatic and manual restarts; "
         "manual share: Llama 3 arXiv:2407.21783 s3.3.4 (3 of 419 interruptions needed "
         "significant manual intervention)",
         domain={"mtbf_s": ">0", "automatic_restart_s": ">=0", "manual_restart_s": ">=0",
                 "manual_fraction": "[0,1]"},
         symbols=_SYM, result_latex="R")
def manual_restart_cost(mtbf_s, automatic_restart_s, manual_restart_s, manual_fraction):
    """Restart cost in Daly's model when a share of failures needs a person.

    A failure restarts automatically (an effective cost R_a, e.g.
    :func:`effective_restart_cost` of swaps and re-queues, detection included) or,
    with probability p_m, by hand after R_m (detection, diagnosis, restart).  As in
    :func:`effective_restart_cost`, the model holds with
    R = -M ln((1 - p_m) e^{-R_a/M} + p_m e^{-R_m/M}), computed as
    R_a - M ln(1 + p_m (e^{(R_a - R_m)/M} - 1)) (log1p, expm1): exactly R_a when p_m = 0.

    Parameters
    ----------
    mtbf_s : numeric
        System mean time between failures, M [s].
    automatic_restart_s : numeric
        Effective cost of an automatic restart, R_a [s].
    manual_restart_s : numeric
        Restart of a failure that needs manual intervention, R_m [s].
    manual_fraction : numeric
        Share of failures that need it, p_m [1].

    Returns
    -------
    numeric
        Effective restart cost R [s].

    Examples
    --------
    >>> round(manual_restart_cost(3 * 3600.0, 630.0, 8 * 3600.0, 3 / 419), 1)  # Llama 3
    701.9
    >>> manual_restart_cost(3 * 3600.0, 630.0, 8 * 3600.0, 0.0)
    630.0

    .. math:: R = -M \\ln\\left((1 - p_m) e^{-R_a/M} + p_m e^{-R_m/M}\\right)
    """
    return automatic_restart_s - mtbf_s * log1p(
        manual_fraction * expm1((automatic_restart_s - manual_restart_s) / mtbf_s))


@formula(reference="GPU-hours billed for the job's nodes and its idle hot spares; "
         "spare pools as in Zhang et al. 2022 (OPT-175B), arXiv:2205.01068 s2.5",
         domain={"job_nodes": ">=1", "spares": ">=0", "gpus_per_node": ">=1",
                 "wall_time_s": ">=0"},
         symbols=_SYM, result_latex="H")
def gpu_hours_with_spares(job_nodes, spares, gpus_per_node, wall_time_s):
    """GPU-hours of a job that keeps hot-spare nodes reserved for its whole run.

    Parameters
    ----------
    job_nodes : numeric
        Nodes the job computes on, N_n [1].
    spares : numeric
        Hot-spare nodes reserved, N_s [1].
    gpus_per_node : numeric
        GPUs per node, g [1].
    wall_time_s : numeric
        Expected wall time of the job, T_w [s].

    Returns
    -------
    numeric
        Billed GPU-hours [GPU h].

    Examples
    --------
    >>> gpu_hours_with_spares(2048, 16, 8, 54 * 86400.0)
    21399552.0

    .. math:: H = (N_n + N_s) g T_w / 3600
    """
    return (job_nodes + spares) * gpus_per_node * wall_time_s / 3600


@formula(reference="M/G/infinity repair pool (Takacs 1962): single-node losses in repair "
         "are Poisson(mu_1), rack losses m x Poisson(mu_r); Poisson arrivals see time "
         "averages (Wolff 1982, Oper. Res. 30(2):223, doi:10.1287/opre.30.2.223)",
         domain={"spares": ">=0", "nodes_lost": ">=0", "single_in_repair": ">=0",
                 "rack_in_repair": ">=0", "rack_nodes": ">=1"},
         symbols=_SYM, result_latex="p_s")
def pool_swap_probability(spares, nodes_lost, single_in_repair, rack_in_repair, rack_nodes):
    """Probability that a failure losing ``nodes_lost`` nodes finds enough healthy spares.

    Nodes in repair: X = X_1 + m Y with X_1 ~ Poisson(mu_1) single nodes (GPU,
    host, network faults) and Y ~ Poisson(mu_r) racks of m nodes.  A failure
    swaps when X + n_l <= N_s.  The sum over Y stops after ``RACK_TERMS`` = 12
    terms: the error is at most P(Y >= 12), below 1.4e-6 for mu_r <= 2 and 1e-3
    for mu_r <= 4 (mu_r = racks x rack failure rate x repair time).  The exact compound law
    is :func:`planner.analysis.simulate.repair_pool_pmf`.

    Parameters
    ----------
    spares : numeric
        Hot-spare nodes, N_s [1].
    nodes_lost : numeric
        Nodes the failure takes out, n_l [1].
    single_in_repair : numeric
        Mean single-node losses in repair, mu_1 [1].
    rack_in_repair : numeric
        Mean rack losses in repair, mu_r [1].
    rack_nodes : numeric
        Nodes of one rack (scale-up domain), m [1].

    Returns
    -------
    numeric
        Swap probability [1].

    Examples
    --------
    >>> round(float(pool_swap_probability(4, 1, 1.5, 0.0, 18)), 4)  # P(Poisson(1.5) <= 3)
    0.9344
    >>> float(pool_swap_probability(0, 1, 1.5, 0.0, 18))
    0.0

    .. math:: p_s = \\sum_{y=0}^{11} e^{-\\mu_r} \\frac{\\mu_r^y}{y!}
              P\\left(X_1 \\le N_s - n_l - m y\\right)
    """
    total = 0
    factorial = 1
    for y in range(RACK_TERMS):
        factorial = factorial * max(y, 1)
        weight = exp(-rack_in_repair) * rack_in_repair ** y / factorial
        total = total + weight * poisson_cdf(spares - nodes_lost - rack_nodes * y,
                                             single_in_repair)
    return total
