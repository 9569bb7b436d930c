"""Carbon: operational emissions from electricity and embodied emissions of hardware.

References
----------
.. [Patterson2021] D. Patterson et al., "Carbon emissions and large neural
   network training", 2021. arXiv:2104.10350
.. [GHG2015] World Resources Institute / WBCSD, "GHG Protocol Scope 2 Guidance",
   2015 (location-based method).
.. [Gupta2021] U. Gupta et al., "Chasing carbon: the elusive environmental
   footprint of computing", HPCA 2021. arXiv:2011.02839
.. [Luccioni2022] A. S. Luccioni, S. Viguier, A.-L. Ligozat, "Estimating the
   carbon footprint of BLOOM, a 176B parameter language model", 2022.
   arXiv:2211.02001
"""

from __future__ import annotations

from .core import formula

JOULES_PER_KWH = 3.6e6


@formula(reference="Patterson et al. 2021, arXiv:2104.10350 s2 (tCO2e = MWh x tCO2e/MWh); "
         "GHG Protocol Scope 2 Guidance (2015), location-based method",
         domain={"energy_j": ">=0", "grid_intensity_g_per_kwh": ">=0"},
         symbols={"energy_j": "E", "grid_intensity_g_per_kwh": "I"},
         result_latex=r"\mathrm{CO_2e}_{op}")
def operational_co2e(energy_j, grid_intensity_g_per_kwh):
    """Operational emissions of the electricity a job draws.

    Parameters
    ----------
    energy_j : numeric
        Energy drawn from the grid (facility level, PUE included) [J].
    grid_intensity_g_per_kwh : numeric
        Carbon intensity of the grid, I [gCO2e/kWh].

    Returns
    -------
    numeric
        Emissions [kgCO2e].

    .. math:: CO_2e = \\frac{E}{3.6\\times 10^6} \\frac{I}{1000}
    """
    return energy_j / JOULES_PER_KWH * grid_intensity_g_per_kwh / 1000


@formula(reference="Linear amortisation of manufacturing emissions over the hardware "
         "lifetime: Gupta et al. 2021, arXiv:2011.02839; Luccioni et al. 2022, "
         "arXiv:2211.02001 s4.1",
         domain={"gpus": ">=0", "embodied_kg_per_gpu": ">=0", "time_s": ">=0",
                 "lifetime_s": ">0"},
         symbols={"gpus": "N", "embodied_kg_per_gpu": "C_{emb}", "time_s": "t",
                  "lifetime_s": "L"},
         result_latex=r"\mathrm{CO_2e}_{emb}")
def embodied_co2e(gpus, embodied_kg_per_gpu, time_s, lifetime_s):
    """Embodied (manufacturing) emissions charged to a job.

    Parameters
    ----------
    gpus : numeric
        GPUs used, N [1].
    embodied_kg_per_gpu : numeric
        Embodied emissions per GPU, its share of the server included [kgCO2e].
    time_s : numeric
        Wall-clock time they are held [s].
    lifetime_s : numeric
        Hardware lifetime [s].

    Returns
    -------
    numeric
        Emissions [kgCO2e].

    .. math:: CO_2e = N C_{emb} \\frac{t}{L}
    """
    return gpus * embodied_kg_per_gpu * time_s / lifetime_s
