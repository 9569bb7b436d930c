"""Monte Carlo simulation of a whole training run: a check of the closed forms.

One configuration (a :class:`RunSpec`) is simulated for thousands of replicas at
once with numpy.  The model is the one the closed forms assume, made explicit:

* **Steps.**  A step ends when the slowest of ``sync_ranks`` ranks ends.  Each
  rank's time is Normal(``step_time_s``, ``step_time_std_s``); independently each
  rank pauses (GC, OS jitter) with probability ``pause_probability`` per step, and
  a step in which any rank paused is ``pause_duration_s`` longer.  So
  ``step = max_i X_i + d * 1{any rank paused}``, whose mean is the order statistic
  ``E[max of n normals]`` plus the pause delay ``d (1 - (1 - p)^n)`` of
  :mod:`formulas.straggler`.
* **Segments.**  Work is done in segments of ``k`` steps (``k`` =
  ``checkpoint_interval_s`` divided by the mean step time, rounded, at least 1),
  each followed by a blocking checkpoint of ``checkpoint_cost_s``; the last
  segment holds the remaining ``steps - (n_seg - 1) k`` steps and is also
  checkpointed (the final model is saved), so a failure-free run takes
  ``steps * step + n_seg * delta``.
* **Failures.**  ``components`` independent components each fail as a renewal
  process (exponential, or Weibull with shape ``weibull_shape`` and mean
  ``component_mtbf_s``); the job fails when any component fails.  A failure
  during compute *or* checkpoint loses everything since the last completed
  checkpoint; a restart then costs ``restart_cost_s``, and a failure during a
  restart starts the restart over.  This is exactly Daly's complete model
  (Daly 2006, eq. 20) in the exponential case, so ``closed_form`` and
  ``simulate`` are compared like for like.
* **Energy.**  The cluster draws ``busy_power_w`` while stepping (including work
  later lost and straggler waits inside a step) and ``idle_power_w`` during
  checkpoint stalls and restarts.  GPU-hours are ``gpus * wall / 3600``.

Exact distributional shortcuts (never per rank, never per step)
---------------------------------------------------------------
* Max of ``n`` iid normals: CDF ``Phi(x)^n``, sampled as
  ``mu + sigma Phi^-1(U^(1/n))`` (computed as ``-Phi^-1(-expm1(log U / n))``
  for accuracy near 1).
* Sum of ``m`` step maxima: exact (``m`` draws) for ``m <= EXACT_STEPS``; else the
  CLT, Normal(``m E``, ``m Var``) with ``E``, ``Var`` of the maximum computed once
  by numerical integration of ``n phi(x) Phi(x)^(n-1)``.  The mean is exact either
  way; the CLT only smooths the shape of the sum of >= 33 maxima.
* Pauses: the number of paused steps among ``m`` is Binomial(``m``,
  ``1 - (1 - p)^n``), exact.
* Exponential failures: the superposition of ``N`` Poisson processes is Poisson
  with rate ``N / M_c``, exact.
* Weibull failures: exact superposition of ``N`` component renewal processes,
  generated independently of the job (hardware fails whatever the job does).
  Each component's first failure time is iid from the equilibrium
  (forward-recurrence) distribution ``F_e(t) = P(1/k, (t/lambda)^k)`` when
  components are in service (``component_age="stationary"``, default), or from
  the Weibull itself for brand-new components (``"new"``); the number of first
  failures in a window is Binomial over the components not yet failed; after a
  failure only the failed component renews (its further failures form a chain
  of Weibull gaps).  Only the few hundred components that fail are ever
  materialised.  Validated against a brute-force per-component simulation in
  ``tests/test_simulate.py``.

Two further checks live here, each a closed form next to its Monte Carlo:
:func:`domains_closed_form` / :func:`simulate_domains` (failure domains that
take several nodes out, hot spares that turn a re-queue into a swap, a
compound-Poisson repair pool; :func:`optimal_spares`), and
:func:`straggler_closed_form` / :func:`simulate_stragglers` (per-rank noise,
garbage collection, slow nodes and pipeline imbalance together).

Loop structure: one iteration per failure epoch (vectorised over replicas, with
masks for finished ones).  Inside an epoch the completed segments before the
failure are found by sampling the cumulative time of ``j0`` segments in one draw
(``j0`` = a safe 8-sigma/Bernstein margin below the expected crossing) and then
walking segment by segment to the crossing (typically 1-3 draws).  If the bulk
draw overshoots the failure (probability ~1e-15), ``j0`` is halved and redrawn,
which biases results by less than that probability.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from formulas import checkpoint as ck
from formulas import overhead
from formulas import reliability as rel
from formulas import straggler as sg
from formulas.reliability import domain_failure_rate, domain_units, gpu_hours_with_spares
from planner.engine.inputs.defaults import STRAGGLERS as _STRAGGLERS
from planner.engine.inputs.domains import check_value

#: Sums of at most this many step maxima are sampled exactly; longer ones by the CLT.
EXACT_STEPS = 32
#: Safety margin (standard deviations) of the bulk jump inside a failure epoch.
_Z = 8.0


@dataclass(frozen=True)
class RunSpec:
    """One training run to simulate (SI units).

    Attributes
    ----------
    steps : int
        Useful steps to complete [1].
    step_time_s : float
        Per-rank mean compute+communication time of one step [s].
    step_time_std_s : float
        Per-rank standard deviation of the step time (normal) [s].
    sync_ranks : int
        Ranks whose maximum sets each step's duration [1].
    pause_probability : float
        Probability that a given rank pauses in a given step [1].
    pause_duration_s : float
        Extra time of a step in which some rank paused [s].
    components : int
        Independent components whose failure stops the job [1].
    component_mtbf_s : float
        Mean time between failures of one component (``inf``: never) [s].
    weibull_shape : float
        Shape k of the component inter-failure distribution (1 = exponential) [1].
    checkpoint_interval_s : float
        Useful compute time between checkpoints, tau [s].
    checkpoint_cost_s : float
        Blocking time of one checkpoint, delta [s].
    restart_cost_s : float
        Time from a failure until work resumes, R [s].
    commit_latency_s : float
        Time from the end of a segment until its checkpoint protects the run (the
        write of an async snapshot, GoCkpt's last step and write), L_c <= tau [s]: a
        failure within L_c of a segment's end rolls back that segment too, and the run
        ends when its last checkpoint commits.
    busy_power_w, idle_power_w : float
        Cluster power while stepping / during checkpoints and restarts [W].
    gpus : int or None
        GPUs billed for GPU-hours (default: ``sync_ranks``) [1].
    component_age : str
        ``"stationary"`` (components in service, equilibrium ages) or ``"new"``
        (all components new at t=0); matters only for Weibull.
    """

    steps: int
    step_time_s: float
    step_time_std_s: float = 0.0
    sync_ranks: int = 1
    pause_probability: float = 0.0
    pause_duration_s: float = 0.0
    components: int = 1
    component_mtbf_s: float = math.inf
    weibull_shape: float = 1.0
    checkpoint_interval_s: float = 3600.0
    checkpoint_cost_s: float = 0.0
    restart_cost_s: float = 0.0
    commit_latency_s: float = 0.0
    busy_power_w: float = 0.0
    idle_power_w: float = 0.0
    gpus: int | None = None
    component_age: str = "stationary"
    #: run overheads (formulas.overhead), added after the failures: evaluation time per
    #: unit of stepping time, the steps redone and the restarts of the expected loss-spike
    #: rollbacks [s] and their expected count (each replica draws its own count, Poisson
    #: with that mean, and pays the totals in proportion), the share of calendar time down
    #: for maintenance
    eval_fraction: float = 0.0
    rollback_busy_s: float = 0.0
    rollback_idle_s: float = 0.0
    rollbacks: float = 0.0
    maintenance_fraction: float = 0.0

    def __post_init__(self):
        if self.steps < 1:
            raise ValueError(f"steps must be >= 1, got {self.steps}")
        for name in ("step_time_s", "checkpoint_interval_s", "component_mtbf_s",
                     "weibull_shape"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        for name in ("step_time_std_s", "pause_duration_s", "checkpoint_cost_s",
                     "restart_cost_s", "commit_latency_s", "busy_power_w", "idle_power_w",
                     "rollbacks"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if not 0 <= self.pause_probability <= 1:
            raise ValueError(f"pause_probability must be in [0, 1], got "
                             f"{self.pause_probability}")
        if self.sync_ranks < 1 or self.components < 1:
            raise ValueError("sync_ranks and components must be >= 1")
        check_value("weibull_shape", self.weibull_shape)  # [0.2, 20]: below, renewals never end
        if self.component_age not in ("stationary", "new"):
            raise ValueError(f"component_age must be 'stationary' or 'new', got "
                             f"{self.component_age!r}")

    @property
    def system_mtbf_s(self) -> float:
        """System mean time between failures, M = M_c / N [s]."""
        return self.component_mtbf_s / self.components

    @property
    def billed_gpus(self) -> int:
        return self.sync_ranks if self.gpus is None else self.gpus


# ---------------------------------------------------------------------------
# Step-time statistics
# ---------------------------------------------------------------------------

def max_normal_moments(n: int) -> tuple[float, float]:
    """Mean and variance of the maximum of ``n`` iid standard normals.

    Numerical integration of the density ``n phi(x) Phi(x)^(n-1)`` on a fine grid
    over [-12, 12] (absolute error < 1e-10 for n up to 1e9).
    """
    from scipy.special import log_ndtr

    n = int(n)
    if n == 1:
        return 0.0, 1.0
    x = np.linspace(-12.0, 12.0, 48_001)
    logpdf = math.log(n) - 0.5 * x * x - 0.5 * math.log(2 * math.pi) + (n - 1) * log_ndtr(x)
    pdf = np.exp(logpdf)
    dx = x[1] - x[0]
    mass = np.sum(pdf) * dx
    mean = np.sum(x * pdf) * dx / mass
    var = np.sum((x - mean) ** 2 * pdf) * dx / mass
    return float(mean), float(var)


@dataclass(frozen=True)
class StepStats:
    """Per-step statistics derived from a :class:`RunSpec` (SI units)."""

    max_mean_s: float      # E[max of n per-rank times]
    max_var_s2: float      # Var[max of n per-rank times]
    pause_q: float         # P(some rank pauses in a step)
    pause_s: float         # pause duration
    sync_ranks: int
    mean: float            # per-rank mean
    std: float             # per-rank std

    @property
    def mean_step_s(self) -> float:
        """E[step] = E[max] + d q [s]."""
        return self.max_mean_s + self.pause_s * self.pause_q

    @property
    def var_step_s2(self) -> float:
        return self.max_var_s2 + self.pause_s ** 2 * self.pause_q * (1 - self.pause_q)


def step_stats(spec: RunSpec) -> StepStats:
    """Order-statistics mean/variance of one step and the pause probability."""
    e, v = max_normal_moments(spec.sync_ranks)
    p, n = spec.pause_probability, spec.sync_ranks
    q = 1.0 if p >= 1 else -math.expm1(n * math.log1p(-p))
    return StepStats(max_mean_s=spec.step_time_s + spec.step_time_std_s * e,
                     max_var_s2=spec.step_time_std_s ** 2 * v,
                     pause_q=q if spec.pause_duration_s > 0 else 0.0,
                     pause_s=spec.pause_duration_s, sync_ranks=n,
                     mean=spec.step_time_s, std=spec.step_time_std_s)


def steps_per_checkpoint(spec: RunSpec, stats: StepStats | None = None) -> int:
    """Steps per segment: ``round(tau / E[step])``, at least 1, at most ``steps``."""
    stats = stats or step_stats(spec)
    k = int(round(spec.checkpoint_interval_s / stats.mean_step_s))
    return max(1, min(spec.steps, k))


def sample_max_normal(rng: np.random.Generator, n: int, mean: float, std: float,
                      size) -> np.ndarray:
    """Exact draws of the maximum of ``n`` iid Normal(mean, std): ``mean + std Phi^-1(U^(1/n))``."""
    from scipy.special import ndtri

    u = rng.random(size)
    # Phi^-1(u^(1/n)) = -Phi^-1(1 - u^(1/n)) with 1 - u^(1/n) = -expm1(log(u)/n), accurate near 1.
    with np.errstate(divide="ignore"):
        tail = -np.expm1(np.log(u) / n)
    return mean - std * ndtri(tail)


def sample_compute_time(rng: np.random.Generator, stats: StepStats, m) -> np.ndarray:
    """Total time of ``m`` steps (array of step counts), one draw per entry.

    Exact for ``m <= EXACT_STEPS`` (sum of exact maxima), CLT above; pauses exact
    (Binomial count of paused steps).
    """
    m = np.asarray(m, dtype=np.int64)
    out = np.zeros(m.shape)
    if stats.std > 0:
        small = (m > 0) & (m <= EXACT_STEPS)
        big = m > EXACT_STEPS
        if small.any():
            ms = m[small]
            width = int(ms.max())
            draws = sample_max_normal(rng, stats.sync_ranks, 0.0, stats.std, (ms.size, width))
            draws[np.arange(width)[None, :] >= ms[:, None]] = 0.0
            out[small] = draws.sum(axis=1)
        if big.any():
            mb = m[big].astype(float)
            out[big] = rng.normal(mb * (stats.max_mean_s - stats.mean),
                                  np.sqrt(mb * stats.max_var_s2))
    out += m * stats.mean
    if stats.pause_q > 0 and stats.pause_s > 0:
        out += stats.pause_s * rng.binomial(m, stats.pause_q)
    return out


# ---------------------------------------------------------------------------
# Failure processes
# ---------------------------------------------------------------------------

class _PoissonFailures:
    """Exponential components: system failures are Poisson with rate N / M_c (exact).

    One exponential gap is drawn for every replica at each call (common random
    numbers: a replica's failure times do not depend on the other replicas).
    """

    def __init__(self, rng, replicas, mtbf_s):
        self.rng, self.replicas, self.mtbf = rng, replicas, mtbf_s

    def next(self, idx, t_now):
        if not math.isfinite(self.mtbf):
            return np.full(idx.size, np.inf)
        gaps = self.rng.exponential(self.mtbf, self.replicas)
        return t_now + gaps[idx]


class _RenewalFailures:
    """Exact superposition of N component Weibull renewal processes (see module doc).

    Failure times are generated window by window ([0, H), [H, 2H), ...) for all
    replicas; per replica a pointer walks the sorted times.
    """

    def __init__(self, rng, replicas, components, mtbf_s, shape, age, horizon_s):
        from scipy.special import gamma

        self.rng, self.replicas, self.n = rng, replicas, components
        self.k = shape
        self.scale = mtbf_s / gamma(1.0 + 1.0 / shape)
        self.age = age
        self.unfailed = np.full(replicas, components, dtype=np.int64)
        self.pending_rep = np.zeros(0, dtype=np.int64)   # chains' next failure >= window end
        self.pending_t = np.zeros(0)
        self.t_end = 0.0
        self.window = max(float(horizon_s), 1e-9)
        self.times = np.zeros(0)
        self.offsets = np.zeros(replicas + 1, dtype=np.int64)
        self.ptr = np.zeros(replicas, dtype=np.int64)
        self._extend()

    # first-failure CDF and its inverse
    def _cdf(self, t):
        from scipy.special import gammainc

        x = (t / self.scale) ** self.k
        if self.age == "new":
            return -np.expm1(-x)
        return gammainc(1.0 / self.k, x)

    def _icdf(self, u):
        from scipy.special import gammaincinv

        if self.age == "new":
            x = -np.log1p(-u)
        else:
            x = gammaincinv(1.0 / self.k, u)
        return self.scale * x ** (1.0 / self.k)

    def _gaps(self, size):
        return self.scale * self.rng.standard_exponential(size) ** (1.0 / self.k)

    def _window_events(self, t0, t1):
        g0, g1 = float(self._cdf(t0)), float(self._cdf(t1))
        p = 0.0 if g0 >= 1 else min(1.0, max(0.0, (g1 - g0) / (1.0 - g0)))
        counts = self.rng.binomial(self.unfailed, p)
        self.unfailed -= counts
        rep = np.repeat(np.arange(self.replicas), counts)
        first = self._icdf(g0 + self.rng.random(rep.size) * (g1 - g0))
        first = np.clip(first, t0, np.nextafter(t1, 0))
        cur_rep = np.concatenate([self.pending_rep, rep])
        cur_t = np.concatenate([self.pending_t, first])
        out_rep, out_t = [], []
        keep_rep, keep_t = [], []
        while cur_t.size:
            inside = cur_t < t1
            keep_rep.append(cur_rep[~inside])
            keep_t.append(cur_t[~inside])
            cur_rep, cur_t = cur_rep[inside], cur_t[inside]
            out_rep.append(cur_rep)
            out_t.append(cur_t)
            cur_t = cur_t + self._gaps(cur_t.size)   # the failed component renews
        self.pending_rep = np.concatenate(keep_rep) if keep_rep else np.zeros(0, np.int64)
        self.pending_t = np.concatenate(keep_t) if keep_t else np.zeros(0)
        return (np.concatenate(out_rep) if out_rep else np.zeros(0, np.int64),
                np.concatenate(out_t) if out_t else np.zeros(0))

    def _extend(self):
        t0, t1 = self.t_end, self.t_end + self.window
        new_rep, new_t = self._window_events(t0, t1)
        counts = np.diff(self.offsets)
        old_rep = np.repeat(np.arange(self.replicas), counts)
        pos = np.arange(self.times.size) - self.offsets[old_rep]
        unread = pos >= self.ptr[old_rep]
        old_rep, old_t = old_rep[unread], self.times[unread]
        rep = np.concatenate([old_rep, new_rep])
        t = np.concatenate([old_t, new_t])
        order = np.lexsort((t, rep))
        self.times = t[order]
        self.offsets = np.concatenate([[0], np.cumsum(np.bincount(rep, minlength=self.replicas))])
        self.ptr[:] = 0
        self.t_end = t1
        self.window *= 2.0

    def next(self, idx, t_now):
        while True:
            have = self.ptr[idx] < (self.offsets[idx + 1] - self.offsets[idx])
            if have.all():
                break
            self._extend()
        out = self.times[self.offsets[idx] + self.ptr[idx]]
        self.ptr[idx] += 1
        return out


def failure_times(spec: RunSpec, replicas: int, horizon_s: float, seed: int = 0,
                  method: str = "auto") -> list[np.ndarray]:
    """System failure times in [0, horizon_s) per replica (for tests and studies)."""
    rng = np.random.default_rng(seed)
    src = _make_failures(spec, rng, replicas, horizon_s, method)
    out = [[] for _ in range(replicas)]
    idx = np.arange(replicas)
    t = np.zeros(replicas)
    while idx.size:
        t_next = src.next(idx, t[idx])
        ok = t_next < horizon_s
        for r, v in zip(idx[ok], t_next[ok], strict=True):
            out[r].append(v)
        t[idx] = t_next
        idx = idx[ok]
    return [np.asarray(v) for v in out]


def _make_failures(spec, rng, replicas, horizon_s, method):
    if method not in ("auto", "renewal", "poisson"):
        raise ValueError(f"method must be auto, renewal or poisson, got {method!r}")
    exponential = spec.weibull_shape == 1.0 and spec.component_age == "stationary"
    if method == "poisson" or (method == "auto" and (exponential
                                                     or not math.isfinite(spec.component_mtbf_s))):
        if method == "poisson" and not exponential:
            raise ValueError("method='poisson' needs weibull_shape == 1")
        return _PoissonFailures(rng, replicas, spec.system_mtbf_s)
    return _RenewalFailures(rng, replicas, spec.components, spec.component_mtbf_s,
                            spec.weibull_shape, spec.component_age, horizon_s)


# ---------------------------------------------------------------------------
# Simulation
# ---------------------------------------------------------------------------

_SUMMARY_FIELDS = ("wall_days", "gpu_hours", "energy_kwh", "failures")


@dataclass(frozen=True)
class SimulationResult:
    """Per-replica outcomes of :func:`simulate` (arrays of length ``replicas``).

    ``lost_work_s`` is the time spent on attempts that were rolled back (compute
    and partial checkpoints since the last completed checkpoint), excluding
    restarts; ``compute_time_s`` is the useful (committed) stepping time and
    ``busy_time_s`` all stepping time including lost work.
    """

    spec: RunSpec
    seed: int
    replicas: int
    steps_per_checkpoint: int
    wall_time_s: np.ndarray
    failures: np.ndarray
    gpu_hours: np.ndarray
    energy_j: np.ndarray
    lost_work_s: np.ndarray
    compute_time_s: np.ndarray
    busy_time_s: np.ndarray
    overshoots: int = field(default=0)

    @property
    def wall_days(self) -> np.ndarray:
        return self.wall_time_s / 86400.0

    @property
    def energy_kwh(self) -> np.ndarray:
        return self.energy_j / 3.6e6

    @property
    def mean_step_time_s(self) -> np.ndarray:
        """Useful stepping time per step, per replica [s]."""
        return self.compute_time_s / self.spec.steps

    def summary(self) -> dict:
        """Mean, standard error of the mean, p10, p50, p90 of the headline quantities."""
        out: dict = {"seed": self.seed, "replicas": self.replicas,
                     "steps_per_checkpoint": self.steps_per_checkpoint}
        for name in _SUMMARY_FIELDS:
            v = np.asarray(getattr(self, name), dtype=float)
            p10, p50, p90 = np.percentile(v, [10, 50, 90])
            out[name] = {"mean": float(v.mean()),
                         "stderr": float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else 0.0,
                         "p10": float(p10), "p50": float(p50), "p90": float(p90)}
        return out


def _segment_layout(spec: RunSpec, stats: StepStats) -> tuple[int, int, int]:
    k = steps_per_checkpoint(spec, stats)
    n_seg = -(-spec.steps // k)
    return k, n_seg, spec.steps - (n_seg - 1) * k


def _roll_back(rows, seg_w, comp, lost, busy, a, prev_x, delta) -> None:
    """Rows whose last completed segment had not committed when they failed: that
    segment is lost too (its compute, still busy time, and its stall)."""
    if rows.size:
        seg_w[rows] -= 1
        comp[rows] -= prev_x[rows]
        busy[a[rows]] += prev_x[rows]
        lost[a[rows]] += prev_x[rows] + delta


def simulate(spec: RunSpec, replicas: int = 10_000, seed: int = 0, *,
             failure_method: str = "auto") -> SimulationResult:
    """Simulate ``replicas`` independent runs of ``spec`` (see module docstring).

    Parameters
    ----------
    spec : RunSpec
        The run.
    replicas : int
        Independent replicas [1].
    seed : int
        Seed of ``numpy.random.SeedSequence``; failures and step times use two
        independent child streams, so for the same seed the failure timeline of
        each replica is the same whatever the checkpoint interval (common random
        numbers for :func:`optimal_interval`); a third draws each replica's number of
        loss-spike rollbacks.
    failure_method : str
        ``"auto"`` (Poisson shortcut for exponential components, renewal
        superposition otherwise), or force ``"renewal"`` / ``"poisson"``.
    """
    stats = step_stats(spec)
    k, n_seg, k_last = _segment_layout(spec, stats)
    delta, restart, commit = spec.checkpoint_cost_s, spec.restart_cost_s, spec.commit_latency_s
    fail_ss, work_ss, spike_ss = np.random.SeedSequence(seed).spawn(3)
    rng = np.random.default_rng(work_ss)
    horizon = (1.5 * closed_form(spec, stats=stats)["wall_time_s"] + 20 * delta + 10 * restart
               + 10 * commit)
    if not math.isfinite(horizon):
        horizon = 1e6 * spec.system_mtbf_s
    failures_src = _make_failures(spec, np.random.default_rng(fail_ss), replicas,
                                  horizon, failure_method)

    mu_d = k * stats.mean_step_s + delta                 # mean segment duration
    var_d = k * stats.var_step_s2                         # its variance

    seg = np.zeros(replicas, dtype=np.int64)              # committed segments
    t = np.zeros(replicas)
    fails = np.zeros(replicas, dtype=np.int64)
    lost = np.zeros(replicas)
    useful = np.zeros(replicas)
    busy = np.zeros(replicas)
    need_restart = np.zeros(replicas, dtype=bool)
    active = np.arange(replicas)
    overshoots = 0

    while active.size:
        f_at = failures_src.next(active, t[active])
        budget = f_at - t[active]
        r = np.where(need_restart[active], restart, 0.0)
        in_restart = budget < r
        if in_restart.any():                              # failure during the restart
            ir = active[in_restart]
            t[ir] = f_at[in_restart]
            fails[ir] += 1
        a = active[~in_restart]
        f_at = f_at[~in_restart]
        t0 = t[a] + r[~in_restart]
        b = f_at - t0                                     # compute budget until the failure
        # --- bulk jump over j0 full segments, safely short of the crossing ---
        full_avail = n_seg - 1 - seg[a]
        jg = np.floor(np.minimum(b / mu_d, full_avail + 1.0))
        dev = _Z * np.sqrt(jg * var_d) + _Z ** 2 * stats.pause_s
        margin = np.ceil(dev / mu_d) + 1
        j0 = np.clip(jg - margin, 0, full_avail).astype(np.int64)
        comp = np.zeros(a.size)
        elapsed = np.zeros(a.size)
        todo = np.nonzero(j0 > 0)[0]
        while todo.size:
            c = sample_compute_time(rng, stats, j0[todo] * k)
            e = c + j0[todo] * delta
            over = e > b[todo]
            comp[todo[~over]] = c[~over]
            elapsed[todo[~over]] = e[~over]
            overshoots += int(over.sum())
            todo = todo[over]
            j0[todo] //= 2
            todo = todo[j0[todo] > 0]
        seg_start = seg[a]
        seg_w = seg_start + j0
        # the last segment completed in this attempt (the bulk's: its mean compute),
        # which a failure within the commit latency of its end rolls back as well
        prev_x = np.full(a.size, k * stats.mean_step_s)
        # --- walk segment by segment to the crossing ---
        walk = np.arange(a.size)
        while walk.size:
            last = seg_w[walk] == n_seg - 1
            x = sample_compute_time(rng, stats, np.where(last, k_last, k))
            d = x + delta
            fits = elapsed[walk] + d <= b[walk]
            ok, ko = walk[fits], walk[~fits]
            elapsed[ok] += d[fits]
            comp[ok] += x[fits]
            prev_x[ok] = x[fits]
            seg_w[ok] += 1
            # failure inside this segment: roll back to the last committed checkpoint
            rem = b[ko] - elapsed[ko]
            lost[a[ko]] += rem
            busy[a[ko]] += np.minimum(rem, x[~fits])
            _roll_back(ko[(rem < commit) & (seg_w[ko] > seg_start[ko])], seg_w, comp, lost,
                       busy, a, prev_x, delta)
            walk = ok[seg_w[ok] < n_seg]
        # the run ends when its last checkpoint commits; a failure before rolls it back
        done = np.nonzero(seg_w == n_seg)[0]
        late = done[elapsed[done] + commit > b[done]]
        if late.size:
            lost[a[late]] += b[late] - elapsed[late]
            _roll_back(late, seg_w, comp, lost, busy, a, prev_x, delta)
        ra = a
        seg[ra] = seg_w
        useful[ra] += comp
        busy[ra] += comp
        finished = seg_w == n_seg
        t[ra] = np.where(finished, t0 + elapsed + commit, f_at)
        fails[ra[~finished]] += 1
        need_restart[ra[~finished]] = True
        need_restart[active[in_restart]] = True
        still = np.ones(replicas, dtype=bool)
        still[ra[finished]] = False
        active = active[still[active]]

    share = 1.0  # of the expected rollbacks' time: each replica's own count over the mean
    if spec.rollbacks > 0:
        share = np.random.default_rng(spike_ss).poisson(spec.rollbacks, replicas) \
            / spec.rollbacks
    t, busy = with_overheads(spec, t, busy, useful, share)
    gpu_hours = spec.billed_gpus * t / 3600.0
    energy = spec.busy_power_w * busy + spec.idle_power_w * (t - busy)
    return SimulationResult(spec=spec, seed=seed, replicas=replicas, steps_per_checkpoint=k,
                            wall_time_s=t, failures=fails, gpu_hours=gpu_hours,
                            energy_j=energy, lost_work_s=lost, compute_time_s=useful,
                            busy_time_s=busy, overshoots=overshoots)


# ---------------------------------------------------------------------------
# Closed forms
# ---------------------------------------------------------------------------

def with_overheads(spec: RunSpec, wall_s, busy_s, solve_s, rollback_share=1.0):
    """Wall and busy time with the run overheads of ``spec`` (planner.engine.run.model's
    ``run_overheads``: evaluations and redone steps busy, rollback restarts idle, then
    maintenance as a share of calendar time); ``rollback_share`` scales the expected
    rollbacks' time (a replica's own number of rollbacks over the expected number)."""
    eval_s = overhead.evaluation_time(solve_s, spec.eval_fraction)
    redone_s = rollback_share * spec.rollback_busy_s
    running = wall_s + eval_s + redone_s + rollback_share * spec.rollback_idle_s
    wall = running + overhead.maintenance_time(running, spec.maintenance_fraction)
    return wall, busy_s + eval_s + redone_s

def _expected_step_closed_form(spec: RunSpec, stats: StepStats) -> float:
    """E[step] from :mod:`formulas.straggler`, else (values it cannot take) the integral."""
    try:
        e = float(sg.expected_max_normal(spec.sync_ranks, spec.step_time_s,
                                                spec.step_time_std_s))
        e += float(sg.pause_delay(spec.sync_ranks, spec.pause_probability,
                                         spec.pause_duration_s))
    except (AttributeError, TypeError, ValueError):
        return stats.mean_step_s
    return e


def closed_form(spec: RunSpec, *, stats: StepStats | None = None) -> dict:
    """The same quantities as :meth:`SimulationResult.summary` from the closed forms.

    E[step] from order statistics plus the pause delay; wall time from Daly's
    complete model (exponential failures, M = M_c / N) applied to the ``n_seg - 1``
    full segments and the shorter final one; failures = wall / M (Wald); energy
    from the expected stepping time ``sum_i M (e^{(tau_i+delta)/M} - e^{delta/M})``
    (compute attempts per segment are geometric with mean ``e^{(tau+delta)/M}``).
    For Weibull components the wall time is still Daly's exponential model with
    the same mean: the point of comparing with :func:`simulate`.
    """
    stats = stats or step_stats(spec)
    e_step = _expected_step_closed_form(spec, stats)
    k, n_seg, k_last = _segment_layout(spec, stats)
    tau, tau_last = k * e_step, k_last * e_step
    delta, restart, m = spec.checkpoint_cost_s, spec.restart_cost_s, spec.system_mtbf_s
    commit = spec.commit_latency_s
    solve = spec.steps * e_step
    if math.isfinite(m):
        # Daly's complete model with the commit latency (daly_wall_time_committed): every
        # segment's expected cost times e^{L_c/M}, plus the wait for the last commit
        wall = float(ck.daly_wall_time_committed((n_seg - 1) * tau, tau, delta, restart, m,
                                                 commit)
                     + ck.daly_wall_time_committed(tau_last, tau_last, delta, restart, m,
                                                   commit)
                     - m * math.exp(restart / m) * math.expm1(commit / m))
        latency = math.exp(commit / m)
        busy = latency * m * ((n_seg - 1) * (math.exp((tau + delta) / m) - math.exp(delta / m))
                              + math.exp((tau_last + delta) / m) - math.exp(delta / m))
        attempts_failed = latency * ((n_seg - 1) * math.expm1((tau + delta) / m)
                                     + math.expm1((tau_last + delta) / m)) + math.expm1(
            commit / m)
        restart_time = attempts_failed * m * math.expm1(restart / m)
        failures = wall / m
        young = float(ck.young_interval(delta, m)) if delta > 0 else 0.0
        daly = float(ck.daly_interval(delta, m)) if delta > 0 else 0.0
    else:
        wall = solve + n_seg * delta + commit
        busy, restart_time, failures = solve, 0.0, 0.0
        young = daly = math.inf
    lost = wall - solve - n_seg * delta - restart_time - commit
    wall, busy = (float(v) for v in with_overheads(spec, wall, busy, solve))
    energy = spec.busy_power_w * busy + spec.idle_power_w * (wall - busy)
    return {
        "mean_step_time_s": e_step,
        "steps_per_checkpoint": k,
        "checkpoints": n_seg,
        "interval_s": tau,
        "system_mtbf_s": m,
        "solve_time_s": solve,
        "wall_time_s": wall,
        "wall_days": wall / 86400.0,
        "failures": failures,
        "gpu_hours": spec.billed_gpus * wall / 3600.0,
        "energy_j": energy,
        "energy_kwh": energy / 3.6e6,
        "busy_time_s": busy,
        "lost_work_s": lost,
        "restart_time_s": restart_time,
        "waste_fraction": 1.0 - solve / wall,
        "young_interval_s": young,
        "daly_interval_s": daly,
    }


def optimal_interval(spec: RunSpec, candidates, replicas: int = 2000, seed: int = 0) -> dict:
    """Simulated optimum checkpoint interval over a grid of ``candidates`` [s].

    Every candidate is simulated with the same seed, so each replica sees the
    same failure timeline (common random numbers).  Returns the grid, mean wall
    time and its standard error per candidate, the waste ``1 - T_s / E[wall]``,
    and the best interval (the effective one, a whole number of steps).
    """
    cands = np.asarray(sorted(set(float(c) for c in candidates)))
    walls, errs, effective = [], [], []
    stats = step_stats(spec)
    for c in cands:
        s = replace(spec, checkpoint_interval_s=float(c))
        res = simulate(s, replicas=replicas, seed=seed)
        walls.append(res.wall_time_s.mean())
        errs.append(res.wall_time_s.std(ddof=1) / math.sqrt(replicas))
        effective.append(res.steps_per_checkpoint * stats.mean_step_s)
    walls, errs, effective = np.asarray(walls), np.asarray(errs), np.asarray(effective)
    solve = spec.steps * stats.mean_step_s
    i = int(np.argmin(walls))
    return {"candidates_s": cands, "effective_interval_s": effective,
            "mean_wall_s": walls, "stderr_wall_s": errs, "waste": 1.0 - solve / walls,
            "best_interval_s": float(effective[i]), "best_mean_wall_s": float(walls[i]),
            "best_waste": float(1.0 - solve / walls[i]), "seed": seed, "replicas": replicas}


# ---------------------------------------------------------------------------
# Failure domains and hot spares
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class FailureDomain:
    """One failure domain of a job (SI units; see :mod:`formulas.reliability`).

    Attributes
    ----------
    name : str
        ``"gpu"``, ``"node"``, ``"rack"``, ``"pod"``, ``"software"``, ...
    units : float
        Units of the domain the job spans (:func:`formulas.reliability.domain_units`) [1].
    unit_mtbf_s : float
        Mean time between failures of one unit [s].
    nodes_lost : int
        Nodes one failure takes out until repaired (1 for a GPU or node, the
        rack's nodes for a rack, 0 for a software fault) [1].
    detection_s, swap_restart_s, requeue_restart_s : float
        Detection time, restart onto hot spares, restart after waiting for
        replacement nodes [s].
    """

    name: str
    units: float
    unit_mtbf_s: float
    nodes_lost: int = 1
    detection_s: float = 0.0
    swap_restart_s: float = 0.0
    requeue_restart_s: float = 0.0

    def __post_init__(self):
        if not self.units >= 0 or not self.unit_mtbf_s > 0 or self.nodes_lost < 0:
            raise ValueError(f"domain {self.name!r}: units must be >= 0, unit_mtbf_s > 0 "
                             f"and nodes_lost >= 0")
        for name in ("detection_s", "swap_restart_s", "requeue_restart_s"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"domain {self.name!r}: {name} must be >= 0")

    @property
    def rate_per_s(self) -> float:
        return float(domain_failure_rate(self.units, self.unit_mtbf_s))


def repair_pool_pmf(domains, repair_time_s: float, tail: float = 1e-12) -> np.ndarray:
    """Distribution of the number of nodes in repair at a random time (index = nodes).

    Domain d's failures arrive as a Poisson process and take ``nodes_lost``
    nodes out together for ``repair_time_s``: the number of its batches in
    repair is Poisson(lambda_d T_r) (M/G/infinity, Takacs 1962), so the nodes
    in repair are a sum of independent scaled Poisson counts (a compound
    Poisson law), computed exactly by convolution up to a tail mass ``tail``.
    Its mean is :func:`formulas.reliability.nodes_in_repair`.
    """
    from scipy.stats import poisson

    pmf = np.ones(1)
    for d in domains:
        if d.nodes_lost == 0:
            continue
        mean = d.rate_per_s * repair_time_s
        k_max = int(poisson.isf(tail, mean)) + 1
        batches = poisson.pmf(np.arange(k_max + 1), mean)
        scaled = np.zeros(k_max * d.nodes_lost + 1)
        scaled[::d.nodes_lost] = batches
        pmf = np.convolve(pmf, scaled)
    return pmf


def spare_swap_probability(spares, nodes_lost: int, pool_pmf: np.ndarray):
    """P(X + nodes_lost <= spares) for X with distribution ``pool_pmf`` (vectorised over spares).

    A failure finds the pool as at a random time (Poisson arrivals see time
    averages); 1 for ``nodes_lost = 0`` (a software fault restarts in place).
    """
    spares = np.asarray(spares, dtype=float)
    if nodes_lost == 0:
        return np.ones(spares.shape)
    cdf = np.cumsum(pool_pmf)
    idx = np.floor(spares - nodes_lost).astype(np.int64)
    return np.where(idx >= 0, cdf[np.clip(idx, 0, cdf.size - 1)], 0.0)


def domains_closed_form(domains, *, spares, repair_time_s: float, solve_time_s: float,
                        interval_s: float, checkpoint_cost_s: float,
                        manual_fraction: float = 0.0, manual_restart_s: float = 0.0) -> dict:
    """Expected wall time of a job under domain failures with ``spares`` hot-spare nodes.

    System rate = sum of the domains' rates; each failure restarts after its
    domain's detection time plus a swap (probability
    :func:`spare_swap_probability`) or a re-queue; the restarts combine into
    one effective cost (:func:`formulas.reliability.effective_restart_cost`,
    weights lambda_d / Lambda) in Daly's complete model: ``wall_time_s``.
    That treats the spare pool's state as independent from failure to
    failure, which holds when the job is long compared with the repair time
    (the pool's memory): Daly's wall time is proportional to 1/E[e^{-R/M}],
    so this is the harmonic mean over the pool's states of the wall time in
    each state, i.e. the job progressing at the time-averaged rate.  For a
    job not much longer than the repair time it is optimistic: the job's own
    failures deplete the pool for the rest of the run (Monte Carlo, 2,048
    nodes, Llama 3 domain rates, 8 spares, 1-day repairs: +0.6 % at a
    500-hour job, +10 % at a 25-hour job; tests/test_failure_domains.py).
    ``spares`` may be an array (the outputs are then arrays).  A share
    ``manual_fraction`` of failures (any domain) restarts after its detection plus
    ``manual_restart_s`` instead (manual intervention), as in the kernel.
    """
    rates = np.array([d.rate_per_s for d in domains])
    total = float(rates.sum())
    if total <= 0:
        raise ValueError("at least one domain must have a positive failure rate")
    mtbf = 1.0 / total
    lost_rate = float(sum(r * d.nodes_lost for r, d in zip(rates, domains, strict=True)))
    pmf = repair_pool_pmf(domains, repair_time_s)
    spares = np.asarray(spares, dtype=float)
    survival = np.zeros(spares.shape)
    mean_restart = np.zeros(spares.shape)
    swap_share = np.zeros(spares.shape)
    for rate, d in zip(rates, domains, strict=True):
        weight = rate / total
        p = spare_swap_probability(spares, d.nodes_lost, pmf)
        r_d = rel.effective_restart_cost(mtbf, 0.0, d.swap_restart_s, d.requeue_restart_s, p)
        survival = survival + weight * np.exp(-d.detection_s / mtbf) * (
            (1 - manual_fraction) * np.exp(-np.asarray(r_d) / mtbf)
            + manual_fraction * np.exp(-manual_restart_s / mtbf))
        mean_restart = mean_restart + weight * (
            (1 - manual_fraction) * np.asarray(rel.domain_restart_cost(
                d.detection_s, d.swap_restart_s, d.requeue_restart_s, p))
            + manual_fraction * (d.detection_s + manual_restart_s))
        swap_share = swap_share + weight * p
    restart = -mtbf * np.log(survival)
    wall = ck.daly_wall_time(solve_time_s, interval_s, checkpoint_cost_s, restart, mtbf)
    return {"system_mtbf_s": mtbf,
            "mean_in_repair": float(rel.nodes_in_repair(lost_rate, repair_time_s)),
            "swap_fraction": swap_share, "mean_restart_s": mean_restart,
            "effective_restart_s": restart, "wall_time_s": wall,
            "failures": np.asarray(wall) / mtbf}


def optimal_spares(domains, *, job_nodes: int, gpus_per_node: int, max_spares: int,
                   repair_time_s: float, solve_time_s: float, interval_s: float,
                   checkpoint_cost_s: float, manual_fraction: float = 0.0,
                   manual_restart_s: float = 0.0) -> dict:
    """Spare count minimising billed GPU-hours (job nodes + spares) x expected wall time.

    A 1-D search over 0..``max_spares`` evaluated as one numpy array.  Spares
    shorten restarts (swap instead of re-queue) but are paid for while idle;
    manual restarts (:func:`domains_closed_form`) are the same with any count.
    """
    candidates = np.arange(int(max_spares) + 1, dtype=float)
    closed = domains_closed_form(domains, spares=candidates, repair_time_s=repair_time_s,
                                 solve_time_s=solve_time_s, interval_s=interval_s,
                                 checkpoint_cost_s=checkpoint_cost_s,
                                 manual_fraction=manual_fraction,
                                 manual_restart_s=manual_restart_s)
    hours = gpu_hours_with_spares(job_nodes, candidates, gpus_per_node, closed["wall_time_s"])
    best = int(np.argmin(hours))
    return {"spares": candidates.astype(int), "wall_time_s": closed["wall_time_s"],
            "gpu_hours": hours, "swap_fraction": closed["swap_fraction"],
            "best_spares": best, "best_gpu_hours": float(hours[best]),
            "best_wall_time_s": float(closed["wall_time_s"][best])}


@dataclass(frozen=True)
class DomainSimulationResult:
    """Per-replica outcomes of :func:`simulate_domains`."""

    wall_time_s: np.ndarray
    failures: np.ndarray
    swaps: np.ndarray
    seed: int

    def summary(self) -> dict:
        n = self.wall_time_s.size
        return {"wall_time_s": float(self.wall_time_s.mean()),
                "wall_time_stderr_s": float(self.wall_time_s.std(ddof=1) / math.sqrt(n)),
                "failures": float(self.failures.mean()),
                "swap_fraction": float(self.swaps.sum() / max(self.failures.sum(), 1)),
                "replicas": n, "seed": self.seed}


def _failure_timelines(rng, domains, replicas, horizon_s):
    """Poisson failure times (sorted, ``inf``-padded), domain index per failure."""
    rates = np.array([d.rate_per_s for d in domains])
    total = rates.sum()
    counts = rng.poisson(total * horizon_s, replicas)
    width = int(counts.max()) if replicas else 0
    # a Poisson count of sorted uniforms is the Poisson process on [0, horizon)
    times = np.sort(np.where(np.arange(width)[None, :] < counts[:, None],
                             rng.uniform(0.0, horizon_s, (replicas, width)), np.inf), axis=1)
    kind = rng.choice(len(domains), size=(replicas, width), p=rates / total)
    return times, kind


def _in_repair_before(times, lost, repair_time_s):
    """Nodes still in repair at each failure time, from earlier failures (deterministic repair)."""
    replicas, width = times.shape
    finite = np.isfinite(times)
    span = float(np.max(np.where(finite, times, 0.0), initial=0.0)) + repair_time_s + 1.0
    offset = np.arange(replicas)[:, None] * span
    flat_t = (np.where(finite, times, span - 0.5) + offset).ravel()  # padding stays in its row
    cum = np.concatenate([[0.0], np.cumsum(np.where(finite, lost, 0).ravel())])
    first_open = np.searchsorted(flat_t, flat_t - repair_time_s, side="right")
    idx = np.arange(flat_t.size)
    return (cum[idx] - cum[first_open]).reshape(replicas, width)


def simulate_domains(domains, *, spares: int, repair_time_s: float, solve_time_s: float,
                     interval_s: float, checkpoint_cost_s: float, replicas: int = 20_000,
                     seed: int = 0, manual_fraction: float = 0.0,
                     manual_restart_s: float = 0.0) -> DomainSimulationResult:
    """Monte Carlo of a job under domain failures with a pool of hot spares.

    Hardware fails whatever the job does: each replica's failures are a Poisson
    process (rate the sum over domains), each of a domain drawn in proportion to
    its rate.  A failure takes its domain's nodes out for ``repair_time_s``
    (deterministic; failures from ``-repair_time_s`` on fill the pool, so it
    starts in its steady state); it is a swap when the nodes already in repair plus the new
    loss fit in ``spares``, else a re-queue.  The job works in segments of
    ``interval_s`` compute plus a ``checkpoint_cost_s`` checkpoint; a failure
    rolls back to the last completed checkpoint and the restart (detection +
    swap or re-queue) starts; a failure during a restart starts that failure's
    restart instead (Daly's complete model).  ``solve_time_s`` must be a whole
    number of intervals.  Each failure needs manual intervention with probability
    ``manual_fraction``: its restart is then detection + ``manual_restart_s``.
    """
    segments = solve_time_s / interval_s
    if not math.isclose(segments, round(segments)) or segments < 1:
        raise ValueError("solve_time_s must be a whole number (>= 1) of interval_s")
    segments = int(round(segments))
    seg_s = interval_s + checkpoint_cost_s
    closed = domains_closed_form(domains, spares=spares, repair_time_s=repair_time_s,
                                 solve_time_s=solve_time_s, interval_s=interval_s,
                                 checkpoint_cost_s=checkpoint_cost_s,
                                 manual_fraction=manual_fraction,
                                 manual_restart_s=manual_restart_s)
    horizon = 3.0 * float(closed["wall_time_s"]) + 10 * max(
        d.detection_s + max(d.requeue_restart_s, manual_restart_s) for d in domains)
    rng = np.random.default_rng(seed)
    # failures from -repair_time_s on: the spare pool is in its steady state at t = 0
    times, kind = _failure_timelines(rng, domains, replicas, horizon + repair_time_s)
    times = times - repair_time_s
    nodes_lost = np.array([d.nodes_lost for d in domains])[kind]
    before = _in_repair_before(times, nodes_lost, repair_time_s)
    swap = (nodes_lost == 0) | (before + nodes_lost <= spares)
    detect = np.array([d.detection_s for d in domains])[kind]
    restart = detect + np.where(swap, np.array([d.swap_restart_s for d in domains])[kind],
                                np.array([d.requeue_restart_s for d in domains])[kind])
    if manual_fraction > 0:  # drawn only then: the random stream is unchanged without
        restart = np.where(rng.random(restart.shape) < manual_fraction,
                           detect + manual_restart_s, restart)

    resume = np.zeros(replicas)          # when work (re)starts
    done_segments = np.zeros(replicas)
    finish = np.full(replicas, np.nan)
    fails = np.zeros(replicas, dtype=np.int64)
    swaps = np.zeros(replicas, dtype=np.int64)
    for j in range(times.shape[1]):
        live = np.isnan(finish)
        if not live.any():
            break
        f = times[:, j]
        # work between resume and f, if the failure is not inside the restart
        working = live & (f >= resume)
        can = np.floor(np.where(working, (f - resume) / seg_s, 0.0))
        need = segments - done_segments
        ends = working & (can >= need)
        finish[ends] = resume[ends] + need[ends] * seg_s
        # failures before the end: inside a restart, or rolling back work
        hit = live & ~ends & np.isfinite(f) & (f >= 0)
        done_segments = np.where(hit & working, done_segments + can, done_segments)
        resume = np.where(hit, f + restart[:, j], resume)
        fails += hit
        swaps += hit & swap[:, j]
    left = np.isnan(finish)
    if left.any():   # no failure left in the horizon: the rest runs clean
        finish[left] = resume[left] + (segments - done_segments[left]) * seg_s
        if np.any(resume[left] + (segments - done_segments[left]) * seg_s > horizon):
            raise RuntimeError("failure horizon too short; raise it")
    return DomainSimulationResult(wall_time_s=finish, failures=fails, swaps=swaps, seed=seed)


def failure_domains(profile, *, gpus: int, gpus_per_node: int,
                    rack_gpus: int | None = None) -> list[FailureDomain]:
    """The failure domains of a catalog reliability profile for a job of ``gpus`` GPUs.

    Uses the profile's ``domain_*_mtbf_s``, ``failure_detection_s``,
    ``swap_restart_s`` and ``requeue_restart_s`` (see
    hardware_catalog/data/reliability/default.toml): GPU faults (per GPU, one
    node out), host and network faults (per node, one node out), software
    faults (per job, restart in place; inter-node software faults,
    ``domain_software_internode_mtbf_s``, count (nodes - 1)^beta units as in
    :func:`formulas.reliability.software_failure_rate`), rack faults (``domain_rack_mtbf_s``, per
    rack of ``rack_gpus`` GPUs, all its nodes out; default: one node).  Domains
    the profile does not state are left out.
    """
    def value(name):
        q = getattr(profile, name, None)
        return None if q is None else float(q.value)

    detect = value("failure_detection_s") or 0.0
    swap = value("swap_restart_s")
    requeue = value("requeue_restart_s")
    if swap is None or requeue is None:
        raise ValueError(f"reliability profile {profile.id!r} has no swap_restart_s / "
                         f"requeue_restart_s")
    nodes = float(domain_units(gpus, gpus_per_node))
    spec = (("gpu", "domain_gpu_mtbf_s", float(gpus), 1),
            ("node", "domain_node_mtbf_s", nodes, 1),
            ("network", "domain_network_mtbf_s", nodes, 1),
            ("software", "domain_software_mtbf_s", 1.0, 0),
            # inter-node software faults: (nodes - 1)^beta "units" of a two-node job's rate
            ("software-internode", "domain_software_internode_mtbf_s",
             max(nodes - 1.0, 0.0) ** (value("domain_software_node_exponent") or 1.0), 0),
            ("rack", "domain_rack_mtbf_s",
             float(domain_units(gpus, rack_gpus or gpus_per_node)),
             max(1, (rack_gpus or gpus_per_node) // gpus_per_node)))
    out = []
    for name, field_name, units, lost in spec:
        mtbf = value(field_name)
        if mtbf is not None:
            out.append(FailureDomain(name, units, mtbf, lost, detect,
                                     swap, swap if lost == 0 else requeue))
    if not out:
        raise ValueError(f"reliability profile {profile.id!r} states no failure domains")
    return out


# ---------------------------------------------------------------------------
# Software stragglers: causes combined
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class StragglerSpec:
    """A synchronising group and the straggler causes acting on it (SI units).

    Rank i's step time is ``step_time_s * (1 + step_time_cv * Z_i)``, times
    ``slow_node_slowdown`` if the rank is slow (probability ``slow_rank_fraction``); the
    group waits for its slowest rank, plus ``gc_pause_s`` if any rank collects
    garbage during the step (Poisson collections, mean gap ``gc_interval_s``
    per rank; ``inf``: none); the pipeline's last-stage imbalance multiplies
    the whole step (``layers``, ``stages``, ``last_stage_extra_layers``,
    ``microbatches``; 1 stage: none). Defaults: :data:`planner.engine.inputs.defaults.STRAGGLERS`.
    """

    ranks: int
    step_time_s: float
    step_time_cv: float = _STRAGGLERS["step_time_cv"][0]
    gc_interval_s: float = _STRAGGLERS["gc_interval_s"][0]
    gc_pause_s: float = _STRAGGLERS["gc_pause_s"][0]
    slow_rank_fraction: float = 0.0
    slow_node_slowdown: float = _STRAGGLERS["slow_node_slowdown"][0]
    layers: float = _STRAGGLERS["layers"][0]
    stages: int = _STRAGGLERS["stages"][0]
    last_stage_extra_layers: float = _STRAGGLERS["last_stage_extra_layers"][0]
    microbatches: int = _STRAGGLERS["microbatches"][0]


def straggler_closed_form(spec: StragglerSpec) -> dict:
    """Expected step time and the slowdown of each cause, from :mod:`formulas.straggler`.

    Combined step = pipeline slowdown x E[slowest rank] + GC pause delay, where
    the slowest rank is, with probability q = 1 - (1 - f)^n, the largest of
    the about n f / q slow ranks (S x E[max of n f / q normals]) unless the
    n ranks' maximum is larger, and otherwise the maximum of n normals.
    Taking the larger of the two expectations approximates the expected
    maximum; :func:`simulate_stragglers` measures the error: at most 0.13 %
    for 128-16,384 ranks, cv 0.5-2 %, slow fractions 1e-4-1e-3 slowed 2-10 %
    (tests/test_software_stragglers.py).  ``slowdown_by_cause`` gives each
    cause alone, from its own formula.
    """
    n, t = spec.ranks, spec.step_time_s
    e_max = float(sg.expected_max_normal(n, t, spec.step_time_cv * t))
    p_gc = 0.0 if math.isinf(spec.gc_interval_s) else float(
        sg.gc_pause_probability(e_max, spec.gc_interval_s))
    gc = float(sg.pause_delay(n, p_gc, spec.gc_pause_s))
    slow = float(sg.slow_node_slowdown(n, spec.slow_rank_fraction, spec.slow_node_slowdown))
    pipe = float(sg.pipeline_imbalance_slowdown(spec.layers, spec.stages,
                                                spec.last_stage_extra_layers,
                                                spec.microbatches))
    # the slowest rank: a slow one (at least one with probability q; about n f / q of
    # them, whose own maximum is taken) or, if none, the maximum of all n
    f = spec.slow_rank_fraction
    q = -math.expm1(n * math.log1p(-f)) if f < 1 else 1.0
    if q > 0 and spec.slow_node_slowdown > 1:
        e_slow = spec.slow_node_slowdown * float(sg.expected_max_normal(
            max(1.0, n * f / q), t, spec.step_time_cv * t))
        compute = (1 - q) * e_max + q * max(e_slow, e_max)
    else:
        compute = e_max
    step = pipe * compute + gc
    causes = {"noise": e_max / t, "gc": (e_max + gc) / e_max, "slow_nodes": slow,
              "pipeline": pipe}
    return {"step_time_s": step, "slowdown": step / t,
            "waste_fraction": float(sg.straggler_waste_fraction(step / t)),
            "slowdown_by_cause": causes,
            "waste_by_cause": {k: float(sg.straggler_waste_fraction(v))
                               for k, v in causes.items()}}


def simulate_stragglers(spec: StragglerSpec, steps: int = 100_000, seed: int = 0) -> dict:
    """Monte Carlo of :class:`StragglerSpec` step times (exact shortcuts, never per rank).

    Per step: K ~ Binomial(n, f) slow ranks; the maxima of the K slow and of
    the n - K other ranks' normal times drawn exactly (inverse CDF of the
    maximum); the larger one, times the pipeline slowdown (the flow-shop
    makespan ratio, deterministic); plus the pause if any rank collects
    garbage, probability 1 - e^{-n E/I} with E the closed form's mean maximum.
    """
    from scipy.special import ndtri

    rng = np.random.default_rng(seed)
    n, t, sd = spec.ranks, spec.step_time_s, spec.step_time_cv * spec.step_time_s
    slow = rng.binomial(n, spec.slow_rank_fraction, steps)

    def max_of(count, scale):
        out = np.full(steps, -np.inf)
        some = count > 0
        with np.errstate(divide="ignore"):
            tail = -np.expm1(np.log(rng.random(int(some.sum()))) / count[some])
        out[some] = scale * (t - sd * ndtri(tail))
        return out

    compute = np.maximum(max_of(slow, spec.slow_node_slowdown), max_of(n - slow, 1.0))
    pipe = float(sg.pipeline_imbalance_slowdown(spec.layers, spec.stages,
                                                spec.last_stage_extra_layers,
                                                spec.microbatches))
    step = pipe * compute
    if not math.isinf(spec.gc_interval_s) and spec.gc_pause_s > 0:
        e_max = float(sg.expected_max_normal(n, t, sd))
        q = -math.expm1(-n * e_max / spec.gc_interval_s)
        step = step + spec.gc_pause_s * (rng.random(steps) < q)
    return {"step_time_s": float(step.mean()),
            "stderr_s": float(step.std(ddof=1) / math.sqrt(steps)), "seed": seed}
