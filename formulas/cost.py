"""Money: cloud rental, energy bills and total cost of ownership of a job.

References
----------
.. [Barroso2018] L. A. Barroso, U. Hoelzle, P. Ranganathan, "The Datacenter as a
   Computer", 3rd ed., Morgan & Claypool, 2018, ch. 6 (cost: capex amortised over
   the equipment lifetime plus opex). doi:10.2200/S00874ED3V01Y201809CAC046
"""

from __future__ import annotations

from .core import formula
from .ops import ceil, log, maximum, sqrt, where

BARROSO = ("Barroso, Hoelzle & Ranganathan 2018, The Datacenter as a Computer 3rd ed., ch. 6, "
           "doi:10.2200/S00874ED3V01Y201809CAC046")
SECONDS_PER_HOUR = 3600.0
JOULES_PER_KWH = 3.6e6
#: Julian year, 365.25 days (IAU).
SECONDS_PER_YEAR = 365.25 * 86400.0
#: Mean Gregorian month, 365.2425 / 12 days: the "trailing month" of spot interruption data.
SECONDS_PER_MONTH = 365.2425 / 12 * 86400.0
SPOT_ADVISOR = ("AWS EC2 Spot Instance Advisor documentation, "
                "https://aws.amazon.com/ec2/spot/instance-advisor/: 'Frequency of interruption "
                "represents the rate at which Spot has reclaimed capacity during the trailing "
                "month', in ranges <5%, 5-10%, 10-15%, 15-20%, >20%")
YOUNG = "Young 1974, Commun. ACM 17(9):530, doi:10.1145/361147.361115"


@formula(reference="GPU-hours x price per GPU-hour, as billed per instance-hour in e.g. the AWS "
         "EC2 On-Demand pricing page (p5.48xlarge = 8 GPUs); " + BARROSO + " ch. 6",
         domain={"gpus": ">=0", "time_s": ">=0", "price_usd_per_gpu_hour": ">=0"},
         symbols={"gpus": "N", "time_s": "t", "price_usd_per_gpu_hour": "c_h"},
         result_latex="C_{cloud}")
def cloud_cost(gpus, time_s, price_usd_per_gpu_hour):
    """Cost of renting GPUs for a job's wall time.

    Parameters
    ----------
    gpus : numeric
        GPUs rented, N [1].
    time_s : numeric
        Wall-clock time they are rented [s].
    price_usd_per_gpu_hour : numeric
        Price per GPU-hour, c_h [USD/h].

    Returns
    -------
    numeric
        Rental cost [USD].

    .. math:: C = N \\frac{t}{3600} c_h
    """
    return gpus * time_s / SECONDS_PER_HOUR * price_usd_per_gpu_hour


@formula(reference="A reserved (committed-use) price is billed for every hour of its term, used "
         "or not: AWS EC2 Reserved Instances documentation ('a one-year term is defined as "
         "31,536,000 seconds (365 days); a three-year term as 94,608,000 seconds (1,095 "
         "days)'); Google Cloud committed use discounts ('you pay the committed amount for "
         "the whole term whether or not you use it'). The share of the unused term resold or "
         "reused is the user's (AWS Reserved Instance Marketplace)",
         domain={"time_s": ">=0", "term_s": ">=0", "reuse_fraction": "[0,1]"},
         symbols={"time_s": "t", "term_s": "T_c", "reuse_fraction": "r"},
         result_latex="t_b")
def committed_time(time_s, term_s, reuse_fraction):
    """Time billed for a job's GPUs: its wall time, or whole committed terms less the share
    of their unused time the user resells or reuses.

    A job on a reserved tier commits to ceil(t / T_c) terms; of the committed time it does
    not use, the share r is resold or put to other work and the rest is paid for nothing.

    Parameters
    ----------
    time_s : numeric
        Wall time of the job, t [s].
    term_s : numeric
        Committed term, T_c [s]; 0 for pay-as-you-go tiers (on-demand, spot).
    reuse_fraction : numeric
        Share of the unused committed time resold or reused, r [1].

    Returns
    -------
    numeric
        Time billed [s].

    Examples
    --------
    >>> round(committed_time(39 * 86400.0, 365 * 86400.0, 0.0) / 86400.0, 6)
    365.0
    >>> round(committed_time(39 * 86400.0, 365 * 86400.0, 0.5) / 86400.0, 6)
    202.0
    >>> committed_time(39 * 86400.0, 0.0, 0.0) / 86400.0
    39.0

    .. math:: t_b = t + (1 - r) (\\lceil t / T_c \\rceil T_c - t) \\text{ if } T_c > 0
              \\text{ else } t
    """
    # terms of at least 1 s (a 0 term, pay as you go, is not divided by)
    terms = ceil(time_s / maximum(term_s, 1.0), simplify=False)
    return where(term_s > 0, time_s + (1 - reuse_fraction) * (terms * term_s - time_s), time_s)


@formula(reference="GPU-hours as reported for training runs, e.g. Touvron et al. 2023 (Llama "
         "2), arXiv:2307.09288 Table 2; 1 h = 3600 s (BIPM SI Brochure, 9th ed., Table 8)",
         domain={"gpus": ">=0", "time_s": ">=0"},
         symbols={"gpus": "N", "time_s": "t"}, result_latex="H")
def gpu_hours(gpus, time_s):
    """GPU-hours of a job occupying ``gpus`` GPUs for ``time_s`` seconds.

    Parameters
    ----------
    gpus : numeric
        GPUs, N [1].
    time_s : numeric
        Wall-clock time [s].

    Returns
    -------
    numeric
        GPU-hours [h].

    Examples
    --------
    >>> gpu_hours(1024, 86400.0)
    24576.0

    .. math:: H = N \\frac{t}{3600}
    """
    return gpus * time_s / SECONDS_PER_HOUR


@formula(reference="Energy x tariff; " + BARROSO,
         domain={"energy_j": ">=0", "electricity_usd_per_kwh": ">=0"},
         symbols={"energy_j": "E", "electricity_usd_per_kwh": "c_e"}, result_latex="C_E")
def energy_cost(energy_j, electricity_usd_per_kwh):
    """Cost of the electricity a job draws.

    Parameters
    ----------
    energy_j : numeric
        Energy drawn from the grid (facility level, PUE included) [J].
    electricity_usd_per_kwh : numeric
        Electricity price, c_e [USD/kWh].

    Returns
    -------
    numeric
        Electricity cost [USD].

    .. math:: C_E = \\frac{E}{3.6\\times 10^6} c_e
    """
    return energy_j / JOULES_PER_KWH * electricity_usd_per_kwh


@formula(reference=BARROSO + " (capex amortised linearly over lifetime + opex)",
         domain={"gpus": ">=0", "time_s": ">=0", "capex_usd_per_gpu": ">=0",
                 "lifetime_s": ">0", "energy_j": ">=0", "electricity_usd_per_kwh": ">=0",
                 "opex_fraction_per_year": ">=0"},
         symbols={"gpus": "N", "time_s": "t", "capex_usd_per_gpu": "K", "lifetime_s": "L",
                  "energy_j": "E", "electricity_usd_per_kwh": "c_e",
                  "opex_fraction_per_year": "m"},
         result_latex="C_{TCO}")
def tco_cost(gpus, time_s, capex_usd_per_gpu, lifetime_s, energy_j, electricity_usd_per_kwh,
             opex_fraction_per_year):
    """Total cost of ownership charged to a job on owned hardware.

    The job pays its share t/L of the capital cost (straight-line amortisation,
    no interest), its electricity, and maintenance/operations priced as a
    yearly fraction of the capital cost (1 year = 365.25 days).

    Parameters
    ----------
    gpus : numeric
        GPUs used, N [1].
    time_s : numeric
        Wall-clock time they are held [s].
    capex_usd_per_gpu : numeric
        Capital cost per GPU, its share of node, network, storage and
        building included, K [USD].
    lifetime_s : numeric
        Depreciation lifetime, L [s].
    energy_j : numeric
        Energy drawn from the grid (facility level) [J].
    electricity_usd_per_kwh : numeric
        Electricity price, c_e [USD/kWh].
    opex_fraction_per_year : numeric
        Yearly maintenance and operations cost as a fraction of capex, m [1/year].

    Returns
    -------
    numeric
        Cost of the job [USD].

    .. math::
        C = N K \\left(\\frac{t}{L} + m \\frac{t}{1\\,\\mathrm{yr}}\\right)
          + \\frac{E}{3.6\\times 10^6} c_e
    """
    capex = gpus * capex_usd_per_gpu
    return capex * time_s / lifetime_s + energy_j / JOULES_PER_KWH * electricity_usd_per_kwh \
        + capex * opex_fraction_per_year * time_s / SECONDS_PER_YEAR


@formula(reference=SPOT_ADVISOR + "; interruptions taken as a Poisson process per instance",
         domain={"interrupted_fraction": "(0,1)", "period_s": ">0"},
         symbols={"interrupted_fraction": "f", "period_s": "T_p"}, result_latex="M_{spot}")
def preemption_mtbf(interrupted_fraction, period_s=SECONDS_PER_MONTH):
    """Mean time between preemptions of one spot instance.

    A fraction ``f`` of instances reclaimed within a period ``T_p`` is, for a Poisson
    process of rate 1/M, the probability of at least one event in ``T_p``:
    ``f = 1 - exp(-T_p / M)``.

    Parameters
    ----------
    interrupted_fraction : numeric
        Fraction of instances interrupted per period, f [1].
    period_s : numeric
        The period the fraction refers to, T_p [s] (default one month).

    Returns
    -------
    numeric
        Mean time between preemptions of one instance [s].

    Examples
    --------
    >>> round(float(preemption_mtbf(0.05)) / 86400, 1)  # 5 % a month
    593.4

    .. math:: M_{spot} = \\frac{-T_p}{\\ln(1 - f)}
    """
    return -period_s / log(1 - interrupted_fraction)


@formula(reference=YOUNG + " (first-order waste sqrt(2 delta / M) + R / M at the Young "
         "interval); break-even of price x expected wall time, capplan derivation",
         domain={"price_ratio": "(0,1]", "checkpoint_cost_s": ">0", "restart_cost_s": ">0",
                 "reference_waste": ">=0"},
         symbols={"price_ratio": "r", "checkpoint_cost_s": r"\delta", "restart_cost_s": "R",
                  "reference_waste": "w_0"}, result_latex="M^*")
def spot_breakeven_mtbf(price_ratio, checkpoint_cost_s, restart_cost_s, reference_waste):
    """System MTBF at which a cheaper, interruptible run costs as much as the reference run.

    Cost is price x wall time.  To first order, at Young's interval the wall time per
    unit of useful compute time is ``1 + sqrt(2 delta / M) + R / M``; a run priced at
    ``r`` times the reference (waste ``w_0``) breaks even where
    ``r (1 + sqrt(2 delta / M) + R / M) = 1 + w_0``, a quadratic in ``1 / sqrt(M)``.
    Below ``M*`` (more frequent interruptions) the interruptible run costs more.

    Parameters
    ----------
    price_ratio : numeric
        Price of the interruptible run over the reference price, r [1].
    checkpoint_cost_s : numeric
        Blocking time of one checkpoint, delta [s].
    restart_cost_s : numeric
        Time from an interruption until work resumes, R [s].
    reference_waste : numeric
        Wasted time per unit of useful compute time of the reference run, w_0 [1].

    Returns
    -------
    numeric
        Break-even system mean time between interruptions, M* [s].

    Examples
    --------
    >>> round(float(spot_breakeven_mtbf(0.5, 10.0, 600.0, 0.0)))  # half price, R = 10 min
    720

    .. math:: M^* = \\left(\\frac{2R}{\\sqrt{2\\delta + 4R(K - 1)} - \\sqrt{2\\delta}}
              \\right)^2, \\quad K = \\frac{1 + w_0}{r}
    """
    k = (1 + reference_waste) / price_ratio
    root = (sqrt(2 * checkpoint_cost_s + 4 * restart_cost_s * (k - 1))
            - sqrt(2 * checkpoint_cost_s)) / (2 * restart_cost_s)
    return 1 / root ** 2


@formula(reference=BARROSO + " (facility capex and opex priced per watt of critical IT "
         "power, amortised monthly); colocation priced per kW of IT capacity per month: CBRE, "
         "North America Data Center Trends H2 2024",
         domain={"facility_usd_per_kw_month": ">=0", "it_power_w": ">=0"},
         symbols={"facility_usd_per_kw_month": "F", "it_power_w": "P_{IT}"},
         result_latex="c_{fac}")
def facility_usd_per_hour(facility_usd_per_kw_month, it_power_w):
    """Facility (building, cooling, power plant) cost per hour for a provisioned IT power.

    Parameters
    ----------
    facility_usd_per_kw_month : numeric
        Facility cost or colocation rent per kW of IT capacity per month, F [USD/(kW month)].
    it_power_w : numeric
        IT power provisioned, at peak [W].

    Returns
    -------
    numeric
        Facility cost per hour [USD/h].

    Examples
    --------
    >>> round(float(facility_usd_per_hour(184.06, 1300.0)), 4)  # one H100 with its node share
    0.3276

    .. math:: c_{fac} = F \\frac{P_{IT}}{1000} \\frac{3600}{T_{month}}
    """
    return facility_usd_per_kw_month * it_power_w / 1000 * SECONDS_PER_HOUR / SECONDS_PER_MONTH


@formula(reference=BARROSO + " (TCO = capex depreciated over the equipment life + opex); "
         "straight-line depreciation to a residual value",
         domain={"capex_usd": ">=0", "residual_fraction": "[0,1)", "lifetime_s": ">0",
                 "opex_fraction_per_year": ">=0", "facility_usd_per_hour": ">=0"},
         symbols={"capex_usd": "K", "residual_fraction": r"\rho", "lifetime_s": "L",
                  "opex_fraction_per_year": "m", "facility_usd_per_hour": "c_{fac}"},
         result_latex="c_{own}")
def ownership_usd_per_hour(capex_usd, residual_fraction, lifetime_s, opex_fraction_per_year,
                           facility_usd_per_hour):
    """Fixed cost of owning one accelerator per calendar hour, used or not.

    Parameters
    ----------
    capex_usd : numeric
        Capital cost of the accelerator with its share of node, network and storage, K [USD].
    residual_fraction : numeric
        Resale value at the end of the depreciation life as a fraction of K, rho [1].
    lifetime_s : numeric
        Depreciation life, L [s].
    opex_fraction_per_year : numeric
        Yearly maintenance and operations as a fraction of K, m [1].
    facility_usd_per_hour : numeric
        Facility cost of its provisioned power per hour [USD/h].

    Returns
    -------
    numeric
        Fixed cost per calendar hour [USD/h].

    Examples
    --------
    >>> year = 365.25 * 86400
    >>> round(float(ownership_usd_per_hour(44700.0, 0.25, 4 * year, 0.05, 0.3276)), 3)
    1.539

    .. math:: c_{own} = 3600 \\left(\\frac{K (1 - \\rho)}{L} + \\frac{m K}{1\\,\\mathrm{yr}}
              \\right) + c_{fac}
    """
    return SECONDS_PER_HOUR * (capex_usd * (1 - residual_fraction) / lifetime_s
                               + capex_usd * opex_fraction_per_year / SECONDS_PER_YEAR) \
        + facility_usd_per_hour


@formula(reference=BARROSO + " ch. 6 (the cost of a used hour is the fixed cost divided by "
         "utilisation, plus energy)",
         domain={"gpus": ">=0", "time_s": ">=0", "ownership_usd_per_hour": ">=0",
                 "utilisation": "(0,1]", "energy_j": ">=0", "electricity_usd_per_kwh": ">=0"},
         symbols={"gpus": "N", "time_s": "t", "ownership_usd_per_hour": "c_{own}",
                  "utilisation": "u", "energy_j": "E", "electricity_usd_per_kwh": "c_e"},
         result_latex="C_{own}")
def owned_job_cost(gpus, time_s, ownership_usd_per_hour, utilisation, energy_j,
                   electricity_usd_per_kwh):
    """Cost of a job on an owned cluster that is busy a share ``u`` of its life.

    The job pays its GPU-hours at the fixed cost per hour divided by the cluster's
    utilisation (idle hours are paid by the work that runs), plus its own energy.

    Parameters
    ----------
    gpus : numeric
        GPUs used, N [1].
    time_s : numeric
        Wall-clock time they are held [s].
    ownership_usd_per_hour : numeric
        Fixed cost of one GPU per calendar hour, c_own [USD/h].
    utilisation : numeric
        Share of the cluster's life doing paid work, u [1].
    energy_j : numeric
        Energy the job draws from the grid (facility level) [J].
    electricity_usd_per_kwh : numeric
        Electricity price at the site, c_e [USD/kWh].

    Returns
    -------
    numeric
        Cost of the job [USD].

    Examples
    --------
    >>> round(float(owned_job_cost(8, 3600.0, 1.5, 0.5, 3.6e7, 0.1)), 2)  # 8 GPU-h, 10 kWh
    25.0

    .. math:: C_{own} = \\frac{N t}{3600} \\frac{c_{own}}{u} + \\frac{E}{3.6\\times10^6} c_e
    """
    return gpus * time_s / SECONDS_PER_HOUR * ownership_usd_per_hour / utilisation \
        + energy_j / JOULES_PER_KWH * electricity_usd_per_kwh


@formula(reference="Break-even of owned_job_cost against cloud_cost per GPU-hour; " + BARROSO
         + " ch. 6; capplan derivation",
         domain={"ownership_usd_per_hour": ">=0", "cloud_usd_per_gpu_hour": ">0",
                 "energy_usd_per_gpu_hour": ">=0"},
         symbols={"ownership_usd_per_hour": "c_{own}", "cloud_usd_per_gpu_hour": "p",
                  "energy_usd_per_gpu_hour": "c_E"},
         result_latex="u^*")
def breakeven_utilisation(ownership_usd_per_hour, cloud_usd_per_gpu_hour,
                          energy_usd_per_gpu_hour):
    """Utilisation of an owned cluster above which buying beats renting.

    Owning costs ``c_own / u + c_E`` per used GPU-hour, renting ``p``; they are equal
    at ``u* = c_own / (p - c_E)``.  A value above 1 means renting wins at any utilisation.

    Parameters
    ----------
    ownership_usd_per_hour : numeric
        Fixed cost of one owned GPU per calendar hour, c_own [USD/h].
    cloud_usd_per_gpu_hour : numeric
        Cloud price per GPU-hour, p [USD/h].
    energy_usd_per_gpu_hour : numeric
        Energy cost of one used GPU-hour on the owned cluster, c_E [USD/h].

    Returns
    -------
    numeric
        Break-even utilisation, u* [1].

    Examples
    --------
    >>> round(float(breakeven_utilisation(1.539, 2.95, 0.12)), 3)
    0.544

    .. math:: u^* = \\frac{c_{own}}{p - c_E}
    """
    return ownership_usd_per_hour / (cloud_usd_per_gpu_hour - energy_usd_per_gpu_hour)


@formula(reference="Simple payback period (capital over monthly savings, no resale, no "
         "discounting); " + BARROSO + " ch. 6; capplan derivation",
         domain={"capex_usd": ">=0", "cloud_usd_per_gpu_hour": ">0",
                 "energy_usd_per_gpu_hour": ">=0", "running_usd_per_hour": ">=0",
                 "utilisation": "(0,1]"},
         symbols={"capex_usd": "K", "cloud_usd_per_gpu_hour": "p",
                  "energy_usd_per_gpu_hour": "c_E", "running_usd_per_hour": "c_r",
                  "utilisation": "u"},
         result_latex="T^*")
def payback_months(capex_usd, cloud_usd_per_gpu_hour, energy_usd_per_gpu_hour,
                   running_usd_per_hour, utilisation):
    """Months of use after which a bought accelerator has cost less than renting it.

    Each month the owner saves the rent of the used hours, ``u p``, and pays their energy
    ``u c_E`` and the running costs ``c_r`` (opex and facility) of every hour.  The
    capital is paid back when the savings reach it.  Negative or infinite: never.

    Parameters
    ----------
    capex_usd : numeric
        Capital cost of the accelerator with its node, network and storage share, K [USD].
    cloud_usd_per_gpu_hour : numeric
        Cloud price per GPU-hour, p [USD/h].
    energy_usd_per_gpu_hour : numeric
        Energy cost of one used GPU-hour, c_E [USD/h].
    running_usd_per_hour : numeric
        Opex and facility cost per calendar hour, c_r [USD/h].
    utilisation : numeric
        Share of hours in use, u [1].

    Returns
    -------
    numeric
        Payback period [month].

    Examples
    --------
    >>> round(float(payback_months(44700.0, 6.88, 0.12, 0.583, 0.9)))  # at AWS's H100 price
    11

    .. math:: T^* = \\frac{K}{(u (p - c_E) - c_r)\\, T_{month} / 3600}
    """
    return capex_usd / ((utilisation * (cloud_usd_per_gpu_hour - energy_usd_per_gpu_hour)
                         - running_usd_per_hour) * SECONDS_PER_MONTH / SECONDS_PER_HOUR)
