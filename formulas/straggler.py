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
"""

from __future__ import annotations

from .core import formula
from .ops import exp, harmonic, log, maximum, ndtri

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
