"""Runs of several phases: batch ramp-up, main, context extension, annealing.

A scenario file's ``[[phases]]`` list (:func:`parse_phases`) describes a run as phases on
the same cluster, each with its own tokens, sequence length, global batch and,
optionally, its own GPU count or layout sizes.  Each phase is evaluated like a one-phase
run; :func:`sum_phases` adds what adds (times, GPU-hours, energies, costs, carbon,
failures, steps, tokens) and derives the ratios of the whole run from the sums (ETTR =
total failure-free time / total wall time, average power = facility energy / wall time,
tCDP = total CO2e x total wall time, CCI = total CO2e / total model FLOPs); the peak
power is the largest phase's.  Phases run one after the other, so the run's wall time
is the sum of the phases' (the checkpoint that closes one phase opens the next).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from formulas.carbon import carbon_delay_product, compute_carbon_intensity
from planner.engine.inputs.domains import check
from planner.engine.inputs.layout_rules import CHECKED_SIZES
from planner.errors import CapplanError, did_you_mean, shown

#: The layout sizes a phase may set: the GPU count, the sizes ``evaluate`` chooses when
#: left out and the others a caller gives
#: (:data:`planner.engine.inputs.layout_rules.CHECKED_SIZES`).
PHASE_LAYOUT = CHECKED_SIZES
#: Keys of an RL phase (``method = "grpo"``) and of a scenario file's RL run: the names
#: of the RL flags (planner.cli.rl_options), with their Python types.
RL_KEYS: dict[str, tuple] = {
    "rollout_group_size": (int,), "prompts": (int,), "prompt_len": (float, int),
    "response_len": (float, int), "response_cv": (float, int),
    "max_response_len": (float, int), "rl_mode": (str,), "rollout_gpus": (int,),
    "off_policy": (bool,), "critic": (bool,), "rl_updates": (int,), "rl_steps": (float, int),
}
#: Keys of one ``[[phases]]`` entry, with their Python types; ``name`` and ``tokens`` (an
#: RL phase: ``rl_steps``) are required, the rest default to the scenario's (or the
#: command's) values.
PHASE_KEYS: dict[str, tuple] = {
    "name": (str,), "tokens": (float, int), "seq_len": (int,), "global_batch": (int,),
    **{k: (int,) for k in PHASE_LAYOUT},
    # the training method and its options (planner.engine.inputs.method)
    "method": (str,), "lora_rank": (int,), "lora_targets": (str,), "base_precision": (str,),
    "packing": (str,), "max_seq_len": (int,), "reference_logprobs": (str,),
    **RL_KEYS,
}
#: Keys of a phase naming its training method and the method's options.
METHOD_KEYS = ("method", "lora_rank", "lora_targets", "base_precision", "packing",
               "max_seq_len", "reference_logprobs", *RL_KEYS)
REQUIRED = ("name", "tokens")
#: Most phases one run may have.
MAX_PHASES = 64

#: Columns that add over phases (SI, and their unit conversions).
ADDITIVE = (
    "tokens", "steps", "solve_time_s", "wall_time_s", "wall_days", "eval_time_s",
    "rollbacks", "rollback_time_s", "maintenance_time_s", "expected_failures", "gpu_hours",
    "energy_gpu_j", "energy_gpu_kwh", "energy_gpu_mwh", "energy_it_j", "energy_it_kwh",
    "energy_it_mwh", "energy_facility_j", "energy_kwh", "energy_mwh",
    "energy_fault_tolerance_j", "cost_cloud_usd", "cost_tco_usd", "cost_usd",
    "co2e_operational_kg", "co2e_embodied_kg", "co2e_kg", "co2e_t",
)


@dataclass(frozen=True)
class Phase:
    """One phase of a run: what differs from the scenario (None: the scenario's)."""

    name: str
    #: None for an RL phase (its length is ``rl_steps``)
    tokens: float | None
    seq_len: int | None = None
    global_batch: int | None = None
    #: the layout sizes it sets (of :data:`PHASE_LAYOUT`), as (name, size) pairs
    layout: tuple[tuple[str, int], ...] = ()
    #: the training method and options it sets (of :data:`METHOD_KEYS`), as pairs
    method: tuple[tuple[str, object], ...] = ()
    #: where it is written, for messages: ``"<scenario file>: phase <n>"``
    where: str = ""

    def options(self) -> dict:
        """The run options this phase sets (those it leaves out are absent)."""
        own = {"tokens": self.tokens, "seq_len": self.seq_len,
               "global_batch": self.global_batch}
        return {**{k: v for k, v in own.items() if v is not None}, **dict(self.layout),
                **dict(self.method)}


def parse_phases(entries, where: str = "scenario") -> tuple[Phase, ...]:
    """The ``[[phases]]`` list of a scenario file, checked: one-line errors naming the
    phase and key (did-you-mean for unknown keys), values inside their domains."""
    if not isinstance(entries, list) or not entries:
        raise CapplanError(f"{where}: phases must be a non-empty list of tables "
                           "([[phases]] entries), got " + shown(entries))
    if len(entries) > MAX_PHASES:
        raise CapplanError(f"{where}: at most {MAX_PHASES} phases, got {len(entries)}")
    phases, names = [], set()
    for i, entry in enumerate(entries, 1):
        label = f"{where}: phase {i}"
        if not isinstance(entry, dict):
            raise CapplanError(f"{label} must be a table with name and tokens, got "
                               f"{shown(entry)}")
        for key, value in entry.items():
            if key not in PHASE_KEYS:
                raise CapplanError(f"{label}: {did_you_mean('key', key, PHASE_KEYS)}")
            kinds = PHASE_KEYS[key]
            if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
                names_ = " or ".join(k.__name__ for k in kinds)
                raise CapplanError(f"{label}: {key} must be a {names_}, got {value!r}")
        rl = entry.get("method") == "grpo"
        _check_rl_keys(label, entry, rl)
        missing = [k for k in (("name", "rl_steps") if rl else REQUIRED) if k not in entry]
        if missing:
            raise CapplanError(f"{label}: needs {' and '.join(missing)} (keys: "
                               f"{', '.join(PHASE_KEYS)})")
        name = entry["name"].strip()
        if not name or name in names:
            raise CapplanError(f"{label}: name {shown(entry['name'])} must be non-empty and "
                               "unique among the phases")
        names.add(name)
        values = {**entry, "name": name, "tokens": None if rl else float(entry["tokens"])}
        check({k: v for k, v in values.items()
               if k != "name" and k not in METHOD_KEYS and v is not None},
              where=f"{label} ({name})")
        phases.append(Phase(name=name, tokens=values["tokens"], seq_len=values.get("seq_len"),
                            global_batch=values.get("global_batch"),
                            layout=tuple((k, values[k]) for k in PHASE_LAYOUT if k in values),
                            method=tuple((k, values[k]) for k in METHOD_KEYS if k in values),
                            where=label))
    return tuple(phases)


def _check_rl_keys(label: str, entry: dict, rl: bool) -> None:
    """An RL phase is ``rl_steps`` steps of its own sequences (no tokens, seq_len or
    global_batch); another phase takes no RL key."""
    if rl:
        for key in ("tokens", "seq_len", "global_batch"):
            if key in entry:
                raise CapplanError(
                    f"{label}: {key} does not apply to a method = \"grpo\" phase (its length "
                    "is rl_steps RL steps of prompts x rollout_group_size sequences of "
                    "prompt_len + response_len tokens)")
        return
    for key in RL_KEYS:
        if key in entry:
            raise CapplanError(f"{label}: {key} applies to a method = \"grpo\" phase, not "
                               f"{entry.get('method', 'the scenario method')!r}")


def in_phase(phase: Phase, error: CapplanError) -> CapplanError:
    """``error`` of one phase's run, said of the phase: its file, number and name, and its
    keys (``tp = 3``, ``change tp/pp/cp``) where the message names the command's flags
    (``--tp 3``): the layout sizes a phase may set, and the GPU count, sequence length
    and batch when the phase sets them (else they are the command's)."""
    own = phase.options()
    keys = [k for k in PHASE_KEYS if k != "name" and (k in own or (k in PHASE_LAYOUT
                                                                   and k != "gpus"))]
    flag = re.compile(r"--(" + "|".join(re.escape(k.replace("_", "-")) for k in
                                        sorted(keys, key=len, reverse=True))
                      + r")\b(?: (-?[0-9][0-9.e+]*))?")

    def key(match) -> str:
        name = match.group(1).replace("-", "_")
        return name if match.group(2) is None else f"{name} = {match.group(2)}"

    return CapplanError(f"{phase.where} ({phase.name}): {flag.sub(key, str(error))}",
                        error.exit_code)


def sum_phases(rows: list[dict]) -> dict:
    """The whole run's totals from the phases' rows (column -> number)."""
    total = {k: float(sum(float(r[k]) for r in rows)) for k in ADDITIVE if k in rows[0]}
    wall, solve = total["wall_time_s"], total["solve_time_s"]
    flops = sum(float(r["model_flops_per_token"]) * float(r["tokens"]) for r in rows)
    total.update(
        ettr=solve / wall, waste_fraction=1 - solve / wall,
        avg_power_w=total["energy_facility_j"] / wall,
        avg_power_mw=total["energy_facility_j"] / wall / 1e6,
        peak_power_w=max(float(r["peak_power_w"]) for r in rows),
        peak_power_mw=max(float(r["peak_power_w"]) for r in rows) / 1e6,
        tcdp_kg_s=float(carbon_delay_product(total["co2e_kg"], wall)),
        cci_kg_per_flop=float(compute_carbon_intensity(total["co2e_kg"], flops)),
    )
    total["tcdp_t_d"] = total["tcdp_kg_s"] / 86_400e3
    total["cci_g_per_eflop"] = total["cci_kg_per_flop"] / 1e-21
    return total
