"""Energy: power of GPUs, nodes, network and facility, and energy over time.

Power is modelled bottom-up: each GPU draws between its idle and its maximum
power in proportion to the share of time it is busy; a node adds CPUs, DRAM,
NICs and fans; the cluster adds switches and storage; the facility multiplies
the IT power by its power usage effectiveness (PUE).

References
----------
.. [Patel2024] P. Patel, E. Choukse, C. Zhang, I. Goiri, B. Warrier, N. Mahalingam,
   R. Bianchini, "Characterizing power management opportunities for LLMs in the
   cloud", ASPLOS 2024. doi:10.1145/3620666.3651329
.. [Barroso2018] L. A. Barroso, U. Hoelzle, P. Ranganathan, "The Datacenter as a
   Computer", 3rd ed., Morgan & Claypool, 2018, s5.4 (power model linear in
   utilisation). doi:10.2200/S00874ED3V01Y201809CAC046
.. [TGG2012] The Green Grid, White Paper #49, "PUE: A comprehensive examination of
   the metric", 2012.
"""

from __future__ import annotations

from .core import formula

BARROSO = ("Barroso, Hoelzle & Ranganathan 2018, The Datacenter as a Computer 3rd ed., "
           "doi:10.2200/S00874ED3V01Y201809CAC046")
PATEL = "Patel et al. 2024 (ASPLOS), doi:10.1145/3620666.3651329"
JOULES_PER_KWH = 3.6e6


@formula(reference="Linear power model idle + (peak - idle) u: " + BARROSO
         + " s5.4 (Fig. 5.7, after Fan, Weber & Barroso 2007 doi:10.1145/1273440.1250665); "
         "GPU power tracking LLM training phases: " + PATEL,
         domain={"idle_power_w": ">=0", "max_power_w": ">=0", "busy_fraction": "[0,1]"},
         symbols={"idle_power_w": "P_{idle}", "max_power_w": "P_{max}", "busy_fraction": "u"},
         result_latex="P_{GPU}")
def gpu_power(idle_power_w, max_power_w, busy_fraction):
    """Average power of one GPU, linear in the share of time it computes.

    Parameters
    ----------
    idle_power_w : numeric
        Power while idle or waiting on communication [W].
    max_power_w : numeric
        Power while computing flat out (at most the TDP or power cap) [W].
    busy_fraction : numeric
        Share of time spent computing, u [1].

    Returns
    -------
    numeric
        Average GPU power [W].

    .. math:: P = P_{idle} + (P_{max} - P_{idle})\\,u
    """
    return idle_power_w + (max_power_w - idle_power_w) * busy_fraction


@formula(reference="Phase-weighted linear power model: " + BARROSO + " s5.4 (power linear in "
         "activity); phases of an LLM training step (compute near TDP, communication and "
         "waits near idle): " + PATEL + "; Llama 3, arXiv:2407.21783 s3.3.4 (GPUs idle during "
         "checkpoints and collectives)",
         domain={"idle_power_w": ">=0", "max_power_w": ">=0", "compute_share": "[0,1]",
                 "compute_power_fraction": "[0,1]", "comm_share": "[0,1]",
                 "comm_power_fraction": "[0,1]"},
         symbols={"idle_power_w": "P_{idle}", "max_power_w": "P_{max}", "compute_share": "s_c",
                  "compute_power_fraction": "f_c", "comm_share": "s_m",
                  "comm_power_fraction": "f_m"},
         result_latex="P_{step}")
def phase_gpu_power(idle_power_w, max_power_w, compute_share, compute_power_fraction,
                    comm_share, comm_power_fraction):
    """Average power of one GPU over a training step, weighted by the step's phases.

    The step splits into compute (share ``s_c`` of its time, drawing ``f_c`` of the
    range between idle and max power above idle), exposed communication (``s_m``, at
    ``f_m``), and the rest (launch gaps, pipeline bubbles, straggler waits) at idle.
    With ``f_c = 1, f_m = 0`` it is :func:`gpu_power` with ``u = s_c``.

    Parameters
    ----------
    idle_power_w : numeric
        Power while idle or waiting [W].
    max_power_w : numeric
        Maximum (TDP or power-cap) power [W].
    compute_share : numeric
        Share of the step spent computing, s_c [1].
    compute_power_fraction : numeric
        Power above idle while computing, as a share of max - idle, f_c [1].
    comm_share : numeric
        Share of the step spent in exposed communication, s_m [1].
    comm_power_fraction : numeric
        Power above idle during exposed communication, as a share of max - idle, f_m [1].

    Returns
    -------
    numeric
        Average GPU power over the step [W].

    Examples
    --------
    >>> phase_gpu_power(100.0, 700.0, 0.9, 1.0, 0.05, 0.0)  # H100, 90 % compute
    640.0

    .. math:: P_{step} = P_{idle} + (P_{max} - P_{idle}) (f_c s_c + f_m s_m)
    """
    return idle_power_w + (max_power_w - idle_power_w) * (
        compute_power_fraction * compute_share + comm_power_fraction * comm_share)


@formula(reference="Sum of component powers; " + BARROSO + " s5.1 (server power breakdown)",
         domain={"gpus_per_node": ">=0", "gpu_power_w": ">=0", "node_overhead_w": ">=0"},
         symbols={"gpus_per_node": "g", "gpu_power_w": "P_{GPU}", "node_overhead_w": "P_{host}"},
         result_latex="P_{node}")
def node_power(gpus_per_node, gpu_power_w, node_overhead_w):
    """Power of one node: its GPUs plus everything else in the chassis.

    Parameters
    ----------
    gpus_per_node : numeric
        GPUs in the node, g [1].
    gpu_power_w : numeric
        Average power of one GPU [W].
    node_overhead_w : numeric
        CPUs, DRAM, NICs, fans, PSU losses of the node [W].

    Returns
    -------
    numeric
        Node power [W].

    .. math:: P_{node} = g P_{GPU} + P_{host}
    """
    return gpus_per_node * gpu_power_w + node_overhead_w


@formula(reference="Sum of component powers; " + BARROSO + " s5.1",
         domain={"nodes": ">=0", "node_power_w": ">=0", "network_power_w": ">=0",
                 "storage_power_w": ">=0"},
         symbols={"nodes": "N", "node_power_w": "P_{node}", "network_power_w": "P_{net}",
                  "storage_power_w": "P_{stor}"},
         result_latex="P_{IT}")
def cluster_it_power(nodes, node_power_w, network_power_w, storage_power_w):
    """IT power of a cluster: nodes, network and storage.

    Parameters
    ----------
    nodes : numeric
        Compute nodes, N [1].
    node_power_w : numeric
        Power of one node [W].
    network_power_w : numeric
        Power of the network (switches, optics) [W].
    storage_power_w : numeric
        Power of the storage system [W].

    Returns
    -------
    numeric
        IT power [W].

    .. math:: P_{IT} = N P_{node} + P_{net} + P_{stor}
    """
    return nodes * node_power_w + network_power_w + storage_power_w


@formula(reference="Sum of component powers; " + BARROSO + " s5.1 (server power breakdown: "
         "CPU, DRAM, NICs, fans beyond the accelerators; network share per node)",
         domain={"nodes": ">=0", "node_overhead_power_w": ">=0",
                 "network_power_per_node_w": ">=0"},
         symbols={"nodes": "n", "node_overhead_power_w": "P_o",
                  "network_power_per_node_w": "P_{net}"},
         result_latex="P_{rest}")
def non_gpu_it_power(nodes, node_overhead_power_w, network_power_per_node_w):
    """IT power of a job beyond its GPUs: the rest of each node and its network share.

    Parameters
    ----------
    nodes : numeric
        Nodes of the job, n [1].
    node_overhead_power_w : numeric
        Node power beyond the GPUs, P_o [W].
    network_power_per_node_w : numeric
        Switch power attributable to one node, P_net [W].

    Returns
    -------
    numeric
        Power [W].

    Examples
    --------
    >>> non_gpu_it_power(128, 2500.0, 300.0)
    358400.0

    .. math:: P_{rest} = n (P_o + P_{net})
    """
    return nodes * (node_overhead_power_w + network_power_per_node_w)


@formula(reference="Switch power scaling with port count; e.g. Abts et al. 2010, "
         "'Energy proportional datacenter networks', ISCA, doi:10.1145/1815961.1816004",
         domain={"ports": ">=0", "switch_power_per_port_w": ">=0"},
         symbols={"ports": "p", "switch_power_per_port_w": "P_{port}"}, result_latex="P_{net}")
def network_power(ports, switch_power_per_port_w):
    """Power of the network fabric from its number of switch ports.

    Parameters
    ----------
    ports : numeric
        Switch ports in use, p [1].
    switch_power_per_port_w : numeric
        Switch power per port, optics included [W].

    Returns
    -------
    numeric
        Network power [W].

    .. math:: P_{net} = p\\,P_{port}
    """
    return ports * switch_power_per_port_w


@formula(reference="PUE = total facility power / IT equipment power; The Green Grid, "
         "White Paper #49 (2012); ISO/IEC 30134-2:2016",
         domain={"it_power_w": ">=0", "pue": ">=1"},
         symbols={"it_power_w": "P_{IT}", "pue": "PUE"}, result_latex="P_{fac}")
def facility_power(it_power_w, pue):
    """Facility power drawn for a given IT power (cooling, power delivery, lighting).

    Parameters
    ----------
    it_power_w : numeric
        IT equipment power [W].
    pue : numeric
        Power usage effectiveness of the site [1].

    Returns
    -------
    numeric
        Total facility power [W].

    .. math:: P_{fac} = PUE \\cdot P_{IT}
    """
    return it_power_w * pue


@formula(reference="Energy = average power x time, 1 J = 1 W s (BIPM SI Brochure, 9th ed., "
         "Table 4)",
         domain={"power_w": ">=0", "time_s": ">=0"},
         symbols={"power_w": "P", "time_s": "t"}, result_latex="E")
def energy(power_w, time_s):
    """Energy drawn at an average power over a time.

    Parameters
    ----------
    power_w : numeric
        Average power [W].
    time_s : numeric
        Duration [s].

    Returns
    -------
    numeric
        Energy [J].

    .. math:: E = P t
    """
    return power_w * time_s


@formula(reference="1 kWh = 3.6e6 J (BIPM SI Brochure, 9th ed., Table 8)",
         domain={"energy_j": ">=0"}, symbols={"energy_j": "E"}, result_latex="E_{kWh}")
def joules_to_kwh(energy_j):
    """Convert energy from joules to kilowatt-hours.

    Parameters
    ----------
    energy_j : numeric
        Energy [J].

    Returns
    -------
    numeric
        Energy [kWh].

    .. math:: E_{kWh} = E / 3.6 \\times 10^6
    """
    return energy_j / JOULES_PER_KWH
