"""Whole-run energy and carbon of BLOOM-176B, OPT-175B and Llama 3 405B against their
published values (planner.analysis.validate.WHOLE_RUN_ENERGY: layouts, profiles, sites and
site classes, with the sources).

    CAPPLAN_CACHE_DIR=/tmp/cache python benchmarks/whole_run_energy.py

The ratios before the measured-average energy accounting (validate.WHOLE_RUN_ENERGY_BEFORE)
were measured by running the same evaluate() calls, without ``site_class`` (the site's own
PUE), on commit be4fedc.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's code, not an installed capplan

from planner.analysis.validate import whole_run_energy_check  # noqa: E402
from planner.report.output import render  # noqa: E402

if __name__ == "__main__":
    print(render(whole_run_energy_check(), "table", title="whole-run energy and carbon"))
