"""Run overheads outside steady-state stepping: evaluations, planned maintenance and
loss-spike rollbacks.

A training run's wall time is more than its steps, checkpoints and failures
(:mod:`formulas.checkpoint`): the job pauses for periodic evaluations, the cluster
goes down for planned maintenance, and loss spikes make the team roll the run back to
an earlier checkpoint and restart it.

References
----------
.. [PaLM2022] A. Chowdhery et al., "PaLM: Scaling Language Modeling with Pathways",
   arXiv:2204.02311, 2022, s5.1 (Training instability): "we observed spikes in the loss
   roughly 20 times during training ... we re-started training from a checkpoint roughly
   100 steps before the spike started, and skipped roughly 200-500 data batches".
.. [OPT2022] S. Zhang et al., "OPT: Open Pre-trained Transformer Language Models",
   arXiv:2205.01068, 2022, s2.5 (loss divergences: restart from an earlier checkpoint
   with a lower learning rate) and the OPT-175B logbook (facebookresearch/metaseq
   projects/OPT/chronicles).
"""

from __future__ import annotations

from .core import formula

PALM = "Chowdhery et al. 2022 (PaLM), arXiv:2204.02311 s5.1"


@formula(reference="Evaluations pause training every --eval-interval steps for --eval-iters "
         "forward passes: Megatron-LM, Shoeybi et al. 2019, arXiv:1909.08053",
         domain={"solve_time_s": ">=0", "eval_fraction": "[0,1)"},
         symbols={"solve_time_s": "T_s", "eval_fraction": "f_e"}, result_latex="T_e")
def evaluation_time(solve_time_s, eval_fraction):
    """Time spent on periodic evaluation and validation runs.

    Parameters
    ----------
    solve_time_s : numeric
        Failure-free training (stepping) time, T_s [s].
    eval_fraction : numeric
        Evaluation time per unit of training time, f_e [1].

    Returns
    -------
    numeric
        Evaluation time [s].

    Examples
    --------
    >>> evaluation_time(1000.0, 0.01)
    10.0

    .. math:: T_e = f_e T_s
    """
    return solve_time_s * eval_fraction


@formula(reference="Planned downtime as a share of calendar time: availability "
         "A = uptime / (uptime + downtime); e.g. Kokolis et al. 2024, arXiv:2410.21680 "
         "(scheduled maintenance on Meta's research clusters)",
         domain={"running_time_s": ">=0", "maintenance_fraction": "[0,1)"},
         symbols={"running_time_s": "T_r", "maintenance_fraction": "f_m"},
         result_latex="T_m")
def maintenance_time(running_time_s, maintenance_fraction):
    """Planned maintenance downtime that falls inside a run.

    The cluster is down for a fraction f_m of calendar time, so a job running T_r
    takes T_r / (1 - f_m) of calendar time; the difference is maintenance.

    Parameters
    ----------
    running_time_s : numeric
        Time the job runs (steps, checkpoints, failures, evaluations), T_r [s].
    maintenance_fraction : numeric
        Share of calendar time the cluster is down for planned maintenance, f_m [1].

    Returns
    -------
    numeric
        Maintenance downtime [s].

    Examples
    --------
    >>> round(maintenance_time(99.0, 0.01), 6)
    1.0

    .. math:: T_m = T_r \\frac{f_m}{1 - f_m}
    """
    return running_time_s * maintenance_fraction / (1 - maintenance_fraction)


@formula(reference=PALM + " (about 20 loss spikes in about 255k steps)",
         domain={"steps": ">=0", "spike_probability_per_step": "[0,1]"},
         symbols={"steps": "N", "spike_probability_per_step": "p_s"}, result_latex="N_s")
def expected_loss_spikes(steps, spike_probability_per_step):
    """Expected loss spikes that need a rollback over a run.

    Parameters
    ----------
    steps : numeric
        Optimizer steps of the run, N [1].
    spike_probability_per_step : numeric
        Probability that a step starts a loss spike needing a rollback, p_s [1].

    Returns
    -------
    numeric
        Expected rollbacks [1].

    Examples
    --------
    >>> round(expected_loss_spikes(255000, 7.84e-5), 1)
    20.0

    .. math:: N_s = p_s N
    """
    return steps * spike_probability_per_step


@formula(reference=PALM + ": restart from a checkpoint about 100 steps before the spike",
         domain={"rollback_steps": ">=0", "step_time_s": ">=0", "restart_s": ">=0"},
         symbols={"rollback_steps": "n_r", "step_time_s": "t_s", "restart_s": "R"},
         result_latex="C_s")
def rollback_cost(rollback_steps, step_time_s, restart_s):
    """Wall time one loss-spike rollback costs: the steps redone plus a restart.

    Parameters
    ----------
    rollback_steps : numeric
        Steps between the checkpoint restarted from and the spike's detection, n_r [1].
    step_time_s : numeric
        Time of one step, t_s [s].
    restart_s : numeric
        Restart from a checkpoint (re-queue, reload), R [s].

    Returns
    -------
    numeric
        Time lost per rollback [s].

    Examples
    --------
    >>> rollback_cost(100, 10.0, 600.0)
    1600.0

    .. math:: C_s = n_r t_s + R
    """
    return rollback_steps * step_time_s + restart_s
