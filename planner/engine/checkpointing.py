"""Compare checkpoint schemes for one cluster: stall, optimal interval, waste, failures.

Numbers come from :mod:`formulas.checkpoint`; this module only composes them
for the three schemes the product compares:

* ``sync``: every rank writes its shard to shared storage and waits;
* ``async``: ranks copy their shard to host memory (blocking) and a background
  process persists it (Nebula/DCP-style); the write must finish within the interval;
* ``in-memory``: shards are copied to a peer's host memory over the network
  (Gemini/DLRover flash checkpoint); restart reloads from peers, not storage.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from formulas import checkpoint as ck
from planner.errors import CapplanError

SCHEMES = ("sync", "async", "in-memory")


@dataclass(frozen=True)
class CheckpointInputs:
    """Inputs of the checkpoint comparison (SI units)."""

    gpus: int = 16384
    gpu_mtbf_s: float = 50_675 * 3600.0
    params: float = 405e9
    bytes_per_param: float = 14.0
    storage_write_bytes_per_s: float = 2e12
    storage_read_bytes_per_s: float = 2e12
    host_copy_bytes_per_s_per_gpu: float = 25e9
    peer_copy_bytes_per_s_per_gpu: float = 25e9
    restart_overhead_s: float = 600.0
    train_days: float = 54.0


def compare_schemes(inputs: CheckpointInputs) -> list[dict]:
    """One row per scheme with stall, intervals, waste, failures and wall time."""
    size_b = ck.checkpoint_size(inputs.params, inputs.bytes_per_param)
    shard_b = size_b / inputs.gpus
    mtbf_s = ck.system_mtbf(inputs.gpu_mtbf_s, inputs.gpus)
    write_s = ck.checkpoint_write_time(size_b, inputs.storage_write_bytes_per_s)
    read_s = ck.checkpoint_write_time(size_b, inputs.storage_read_bytes_per_s)
    host_s = ck.checkpoint_write_time(shard_b, inputs.host_copy_bytes_per_s_per_gpu)
    peer_s = ck.checkpoint_write_time(shard_b, inputs.peer_copy_bytes_per_s_per_gpu)
    stall_s = {"sync": write_s, "async": host_s, "in-memory": host_s + peer_s}
    restart_s = {"sync": inputs.restart_overhead_s + read_s,
                 "async": inputs.restart_overhead_s + read_s,
                 "in-memory": inputs.restart_overhead_s + peer_s}
    solve_s = inputs.train_days * 86400.0
    rows = []
    for scheme in SCHEMES:
        delta, restart = stall_s[scheme], restart_s[scheme]
        young = float(ck.young_interval(delta, mtbf_s))
        daly = float(ck.daly_interval(delta, mtbf_s))
        # An async write must have drained before the next snapshot starts.
        interval = max(daly, write_s) if scheme == "async" else daly
        wall_s = float(ck.daly_wall_time(solve_s, interval, delta, restart, mtbf_s))
        if not math.isfinite(wall_s):
            raise CapplanError(
                f"with the {scheme} scheme the run never finishes in expectation: system MTBF "
                f"{mtbf_s:.3g} s against a {delta:.3g} s checkpoint stall and a {restart:.3g} s "
                "restart overflow Daly's expected wall time; raise the MTBF or the bandwidths, "
                "or lower the restart time")
        rows.append({
            "scheme": scheme,
            "checkpoint_size_bytes": float(size_b),
            "stall_s": float(delta),
            "restart_s": float(restart),
            "system_mtbf_s": float(mtbf_s),
            "young_interval_s": young,
            "daly_interval_s": daly,
            "interval_s": interval,
            "waste_fraction": float(ck.daly_waste_fraction(interval, delta, restart, mtbf_s)),
            "expected_failures": float(ck.expected_failures(wall_s, mtbf_s)),
            "wall_days": wall_s / 86400.0,
            "ettr": solve_s / wall_s,
        })
    base = rows[0]["wall_days"]
    for row in rows:
        row["days_saved_vs_sync"] = base - row["wall_days"]
    return rows
