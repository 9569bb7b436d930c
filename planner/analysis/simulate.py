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
    busy_power_w: float = 0.0
    idle_power_w: float = 0.0
    gpus: int | None = None
    component_age: str = "stationary"

    def __post_init__(self):
        if self.steps < 1:
            raise ValueError(f"steps must be >= 1, got {self.steps}")
        for name in ("step_time_s", "checkpoint_interval_s", "component_mtbf_s",
                     "weibull_shape"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        for name in ("step_time_std_s", "pause_duration_s", "checkpoint_cost_s",
                     "restart_cost_s", "busy_power_w", "idle_power_w"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if not 0 <= self.pause_probability <= 1:
            raise ValueError(f"pause_probability must be in [0, 1], got "
                             f"{self.pause_probability}")
        if self.sync_ranks < 1 or self.components < 1:
            raise ValueError("sync_ranks and components must be >= 1")
        from planner.engine.domains import check_value

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
        numbers for :func:`optimal_interval`).
    failure_method : str
        ``"auto"`` (Poisson shortcut for exponential components, renewal
        superposition otherwise), or force ``"renewal"`` / ``"poisson"``.
    """
    stats = step_stats(spec)
    k, n_seg, k_last = _segment_layout(spec, stats)
    delta, restart = spec.checkpoint_cost_s, spec.restart_cost_s
    fail_ss, work_ss = np.random.SeedSequence(seed).spawn(2)
    rng = np.random.default_rng(work_ss)
    horizon = 1.5 * closed_form(spec, stats=stats)["wall_time_s"] + 20 * delta + 10 * restart
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
        seg_w = seg[a] + j0
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
            seg_w[ok] += 1
            # failure inside this segment: roll back to the last checkpoint
            rem = b[ko] - elapsed[ko]
            lost[a[ko]] += rem
            busy[a[ko]] += np.minimum(rem, x[~fits])
            walk = ok[seg_w[ok] < n_seg]
        ra = a
        seg[ra] = seg_w
        useful[ra] += comp
        busy[ra] += comp
        finished = seg_w == n_seg
        t[ra] = np.where(finished, t0 + elapsed, f_at)
        fails[ra[~finished]] += 1
        need_restart[ra[~finished]] = True
        need_restart[active[in_restart]] = True
        still = np.ones(replicas, dtype=bool)
        still[ra[finished]] = False
        active = active[still[active]]

    gpu_hours = spec.billed_gpus * t / 3600.0
    energy = spec.busy_power_w * busy + spec.idle_power_w * (t - busy)
    return SimulationResult(spec=spec, seed=seed, replicas=replicas, steps_per_checkpoint=k,
                            wall_time_s=t, failures=fails, gpu_hours=gpu_hours,
                            energy_j=energy, lost_work_s=lost, compute_time_s=useful,
                            busy_time_s=busy, overshoots=overshoots)


# ---------------------------------------------------------------------------
# Closed forms
# ---------------------------------------------------------------------------

def _expected_step_closed_form(spec: RunSpec, stats: StepStats) -> float:
    """E[step] from :mod:`formulas.straggler` when available, else the integral."""
    try:
        from formulas import straggler
    except ImportError:
        return stats.mean_step_s
    try:
        e = float(straggler.expected_max_normal(spec.sync_ranks, spec.step_time_s,
                                                spec.step_time_std_s))
        e += float(straggler.pause_delay(spec.sync_ranks, spec.pause_probability,
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
    from formulas import checkpoint as ck

    stats = stats or step_stats(spec)
    e_step = _expected_step_closed_form(spec, stats)
    k, n_seg, k_last = _segment_layout(spec, stats)
    tau, tau_last = k * e_step, k_last * e_step
    delta, restart, m = spec.checkpoint_cost_s, spec.restart_cost_s, spec.system_mtbf_s
    solve = spec.steps * e_step
    if math.isfinite(m):
        wall = float(ck.daly_wall_time((n_seg - 1) * tau, tau, delta, restart, m)
                     + ck.daly_wall_time(tau_last, tau_last, delta, restart, m))
        busy = m * ((n_seg - 1) * (math.exp((tau + delta) / m) - math.exp(delta / m))
                    + math.exp((tau_last + delta) / m) - math.exp(delta / m))
        attempts_failed = ((n_seg - 1) * math.expm1((tau + delta) / m)
                           + math.expm1((tau_last + delta) / m))
        restart_time = attempts_failed * m * math.expm1(restart / m)
        failures = wall / m
        young = float(ck.young_interval(delta, m)) if delta > 0 else 0.0
        daly = float(ck.daly_interval(delta, m)) if delta > 0 else 0.0
    else:
        wall = solve + n_seg * delta
        busy, restart_time, failures = solve, 0.0, 0.0
        young = daly = math.inf
    lost = wall - solve - n_seg * delta - restart_time
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
