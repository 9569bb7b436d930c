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


SCHNEIDER = ("Schneider, Xu, Benecke, Patterson, Huang, Ranganathan & Elsworth 2025, "
             "'Life-Cycle Emissions of AI Hardware: A Cradle-To-Grave Approach and "
             "Generational Trends', arXiv:2502.01671")
CORDOBA = ("Elgamal et al., 'CORDOBA: Carbon-Efficient Optimization Framework for Computing "
           "Systems', HPCA 2025, https://openreview.net/forum?id=IjhyMJ1PWy")


@formula(reference=SCHNEIDER + " s3 (CCI = (embodied + operational CO2e) / useful FLOPs; "
         "the paper states it in gCO2e per exaFLOP); here for one job: its share of the "
         "embodied emissions plus its operational emissions over its model FLOPs",
         domain={"co2e_kg": ">=0", "useful_flops": ">0"},
         symbols={"co2e_kg": r"\mathrm{CO_2e}", "useful_flops": "F"},
         result_latex=r"\mathrm{CCI}")
def compute_carbon_intensity(co2e_kg, useful_flops):
    """Compute carbon intensity (CCI): emissions per useful floating-point operation.

    Parameters
    ----------
    co2e_kg : numeric
        Emissions charged to the computation, embodied share plus operational [kgCO2e].
    useful_flops : numeric
        Useful floating-point operations performed, F (model FLOPs, recompute
        excluded) [FLOP].

    Returns
    -------
    numeric
        Compute carbon intensity [kgCO2e/FLOP].

    Examples
    --------
    >>> round(compute_carbon_intensity(1000.0, 1e24) * 1e21, 6)  # 1 t on 1e24 FLOP, g/EFLOP
    1.0

    .. math:: \\mathrm{CCI} = \\frac{\\mathrm{CO_2e}}{F}
    """
    return co2e_kg / useful_flops


@formula(reference=CORDOBA + " (tCDP = total carbon x execution time)",
         domain={"co2e_kg": ">=0", "time_s": ">=0"},
         symbols={"co2e_kg": r"\mathrm{CO_2e}", "time_s": "t"},
         result_latex=r"\mathrm{tCDP}")
def carbon_delay_product(co2e_kg, time_s):
    """Total carbon-delay product (tCDP): total emissions times the time to solution.

    Lower is better; it penalises both a dirty run and a slow one, as the
    energy-delay product does for energy.

    Parameters
    ----------
    co2e_kg : numeric
        Total emissions, embodied share plus operational [kgCO2e].
    time_s : numeric
        Time to solution (wall time of the run), t [s].

    Returns
    -------
    numeric
        Carbon-delay product [kgCO2e s].

    Examples
    --------
    >>> carbon_delay_product(2.0, 86400.0)
    172800.0

    .. math:: \\mathrm{tCDP} = \\mathrm{CO_2e}\\, t
    """
    return co2e_kg * time_s


@formula(reference="Per-accelerator share of a server's embodied emissions: Luccioni et al. "
         "2022, arXiv:2211.02001 s4.1 (GPU and server node counted apart); Gupta et al. 2022, "
         "ACT, ISCA doi:10.1145/3470496.3527408 (a system's embodied carbon is the sum of its "
         "parts)",
         domain={"accelerator_kg": ">=0", "node_kg": ">=0", "gpus_per_node": ">=1"},
         symbols={"accelerator_kg": "C_{acc}", "node_kg": "C_{node}", "gpus_per_node": "g"},
         result_latex="C_{emb}")
def embodied_per_accelerator(accelerator_kg, node_kg, gpus_per_node):
    """Embodied emissions per accelerator, its share of the host node included.

    Parameters
    ----------
    accelerator_kg : numeric
        Embodied emissions of one accelerator package and board [kgCO2e].
    node_kg : numeric
        Embodied emissions of the node without its accelerators (CPUs, DRAM,
        storage, chassis) [kgCO2e].
    gpus_per_node : numeric
        Accelerators per node, g [1].

    Returns
    -------
    numeric
        Embodied emissions per accelerator [kgCO2e].

    Examples
    --------
    >>> embodied_per_accelerator(150.0, 2500.0, 8)  # BLOOM's GPU + HPE Apollo node share
    462.5

    .. math:: C_{emb} = C_{acc} + \\frac{C_{node}}{g}
    """
    return accelerator_kg + node_kg / gpus_per_node


ACT = ("Gupta, Elgamal, Hills, Wei, Lee, Brooks & Wu, 'ACT: Designing Sustainable Computer "
       "Systems with an Architectural Carbon Modeling Tool', ISCA 2022, "
       "doi:10.1145/3470496.3527408; inputs of its Table 1 as shipped in "
       "github.com/facebookresearch/ACT act/models (logic/epa, gpa_95, gpa_99, materials, "
       "dram/dram_hynix, carbon_intensity/location_2022; DEFAULT_FAB_YIELD 0.875, "
       "CARBON_PER_IC_PACKAGE 150 g)")


@formula(reference=ACT + ": embodied carbon of a logic die = area x (fab intensity x energy "
         "per area + gas per area + materials per area) / yield, plus memory per GB and 150 g "
         "per IC package",
         domain={"die_area_cm2": ">=0", "fab_intensity_g_per_kwh": ">=0",
                 "energy_per_area_kwh_per_cm2": ">=0", "gas_per_area_g_per_cm2": ">=0",
                 "materials_per_area_g_per_cm2": ">=0", "fab_yield": "(0,1]",
                 "memory_gb": ">=0", "memory_g_per_gb": ">=0", "packages": ">=0",
                 "package_g": ">=0"},
         symbols={"die_area_cm2": "A", "fab_intensity_g_per_kwh": "CI_{fab}",
                  "energy_per_area_kwh_per_cm2": "EPA", "gas_per_area_g_per_cm2": "GPA",
                  "materials_per_area_g_per_cm2": "MPA", "fab_yield": "Y",
                  "memory_gb": "M", "memory_g_per_gb": "C_{mem}", "packages": "n",
                  "package_g": "C_{pkg}"},
         result_latex="C_{ACT}")
def act_chip_embodied(die_area_cm2, fab_intensity_g_per_kwh, energy_per_area_kwh_per_cm2,
                      gas_per_area_g_per_cm2, materials_per_area_g_per_cm2, fab_yield,
                      memory_gb, memory_g_per_gb, packages, package_g=150.0):
    """Embodied carbon of an accelerator's silicon by the ACT model (logic, memory, packages).

    Only the integrated circuits: the board, heat sink, power delivery and the server
    are outside it.

    Parameters
    ----------
    die_area_cm2 : numeric
        Logic die area, A [cm2].
    fab_intensity_g_per_kwh : numeric
        Carbon intensity of the fab's electricity, CI_fab [gCO2e/kWh].
    energy_per_area_kwh_per_cm2 : numeric
        Fab energy per die area of the process node, EPA [kWh/cm2].
    gas_per_area_g_per_cm2 : numeric
        Process-gas emissions per area after abatement, GPA [gCO2e/cm2].
    materials_per_area_g_per_cm2 : numeric
        Raw-material emissions per area, MPA [gCO2e/cm2].
    fab_yield : numeric
        Fab yield, Y [1].
    memory_gb : numeric
        Memory capacity on the package, M [GB].
    memory_g_per_gb : numeric
        Embodied carbon of memory per GB, C_mem [gCO2e/GB].
    packages : numeric
        IC packages (dies and memory stacks), n [1].
    package_g : numeric
        Embodied carbon per IC package, C_pkg [gCO2e].

    Returns
    -------
    numeric
        Embodied carbon of the silicon [kgCO2e].

    Examples
    --------
    >>> # H100: 814 mm2 die on a 5 nm-class node, Taiwan grid, GPA97; 80 GB at ACT's DDR4
    >>> round(float(act_chip_embodied(8.14, 583.0, 2.75, 327.5, 500.0, 0.875, 80.0, 65.0, 6)), 1)
    28.7

    .. math:: C_{ACT} = \\frac{A (CI_{fab} EPA + GPA + MPA)}{Y} + M C_{mem} + n C_{pkg}
    """
    logic_g = die_area_cm2 * (fab_intensity_g_per_kwh * energy_per_area_kwh_per_cm2
                              + gas_per_area_g_per_cm2 + materials_per_area_g_per_cm2) / fab_yield
    return (logic_g + memory_gb * memory_g_per_gb + packages * package_g) / 1000
