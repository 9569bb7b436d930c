"""Figures of a plan result (matplotlib, the ``plot`` extra).

* :func:`plot_scaling`: wall days, cost and energy against the GPU count, one line
  per accelerator, the optimum of each objective and each accelerator's knee marked;
* :func:`plot_pareto`: the Pareto front (time, cost, energy) as cost against energy,
  coloured by wall days, the winners annotated;
* :func:`plot_breakdown`: where the step time and the whole-run time of each
  objective's winner go;
* :func:`plot_plan`: the three in one figure (``capplan plan --plot FILE``);
* :func:`plot_phases`: a plan of several phases, the run's totals against the GPU count
  and the headline winner's phases (``capplan plan --scenario FILE --plot FILE`` with
  ``[[phases]]``).

The format follows the file suffix (.png, .svg, .pdf); an existing file is only
overwritten with ``force=True``.  matplotlib is imported inside the functions and
always with the non-interactive Agg backend.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from planner.engine.run.columns import layout_key, part_colours, step_parts
from planner.engine.run.readable import count_text
from planner.engine.run.reductions import pareto_mask
from planner.engine.search.optimize import explain_infeasible
from planner.errors import INFEASIBLE, CapplanError
from planner.report import output
from planner.report.output import atomic_target, plot_text
from planner.report.tables import layout_text, time_breakdown

SUFFIXES = (".png", ".svg", ".pdf")
DPI = 150

#: Objective -> (label, marker) of its winner.
WINNER_STYLE = {"time": ("fastest", "*"), "cost": ("cheapest", "D"),
                "energy": ("least energy", "s"), "carbon": ("least carbon", "^"),
                "tcdp": ("least carbon x delay", "v"), "cci": ("least carbon per FLOP", "P")}
#: Scaling panels: (frontier column, axis label, objectives whose optimum is marked there).
SCALING_PANELS = (("wall_days", "wall time [days]", ("time",)),
                  ("cost_usd", "cost [USD]", ("cost",)),
                  ("energy_mwh", "energy [MWh]", ("energy", "carbon")))
HARDWARE_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h", "p", "*", "8", "d", "H")


# --------------------------------------------------------------------------- plumbing


def check_target(path, force: bool = False) -> Path:
    """The output path, after checking its suffix and that it may be written."""
    if Path(path).suffix.lower() not in SUFFIXES:
        raise CapplanError(f"plot file must end in {', '.join(SUFFIXES)}, got "
                           f"'{Path(path).name}'")
    target = output.check_target(path, force, flag="--plot")
    _pyplot()  # matplotlib missing: the install hint now, before any work
    return target


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise CapplanError("matplotlib is not installed; pip install 'capplan[plot]'") from None
    return plt


def _save(fig, target: Path, force: bool = False) -> Path:
    """Save ``fig`` atomically (a temporary file beside ``target``, then a rename)."""
    plt = _pyplot()
    metadata = {"Date": None} if target.suffix.lower() in (".svg", ".pdf") else None
    try:
        with atomic_target(str(target), force) as tmp:
            fig.savefig(tmp, dpi=DPI, bbox_inches="tight", pad_inches=0.15, metadata=metadata)
    finally:
        plt.close(fig)
    return target


def _figure(size):
    plt = _pyplot()
    return plt.figure(figsize=size, dpi=DPI, layout="constrained")


def gpu_label(n: float) -> str:
    """128 -> '128', 1024 -> '1k', 16384 -> '16k', 1536 -> '1.5k'."""
    n = int(round(n))
    if n < 1024:
        return str(n)
    return f"{n / 1024:g}k"


def si_label(value: float) -> str:
    """150000 -> '150k', 1.2e6 -> '1.2M'."""
    for limit, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= limit:
            return f"{value / limit:g}{suffix}"
    return f"{value:g}"


def _title(result) -> str:
    s = result.scenario
    objective = WINNER_STYLE.get(s.objective, (s.objective,))[0]
    parts = [f"{s.model} on {count_text(s.tokens)} tokens",
             f"objective: {objective} ({s.objective})", f"site {s.site}", s.precision,
             f"{s.checkpoint} checkpoints"]
    for value, text in ((s.deadline_days, "deadline {:g} days"),
                        (s.budget_usd, "budget {:,.0f} USD"),
                        (s.max_power_mw, "power cap {:g} MW")):
        if value is not None:
            parts.append(text.format(value))
    return plot_text(", ".join(parts))


#: Accelerator families, (id prefixes, label, colour): one colour per vendor generation,
#: so 20 accelerators read as 8 groups; members of a family differ by line style and marker.
FAMILIES = (
    (("gb300", "gb200", "b300", "b200"), "NVIDIA Blackwell", "#1a9850"),
    (("h100", "h200", "h800", "h20", "gt-h100", "gh200"), "NVIDIA Hopper", "#91cf60"),
    (("a100", "a800", "a10", "l40", "l4", "v100"), "NVIDIA Volta/Ampere/Ada", "#8c8c8c"),
    (("mi3", "mi2", "mi1"), "AMD Instinct", "#d73027"),
    (("tpu",), "Google TPU", "#4575b4"),
    (("gaudi",), "Intel Gaudi", "#17becf"),
    (("trn", "inf"), "AWS Trainium", "#fd8d3c"),
)
OTHER_FAMILY = ("other", "#984ea3")
FAMILY_STYLES = ("-", "--", ":", "-.")
FAMILY_MARKERS = ("o", "s", "^", "D", "v", "P")


def hardware_family(hw: str) -> tuple[str, str]:
    """(family label, colour) of an accelerator id: 'h100-sxm' -> ('NVIDIA Hopper', ...)."""
    for prefixes, label, colour in FAMILIES:
        if hw.lower().startswith(prefixes):
            return label, colour
    return OTHER_FAMILY


def family_groups(names) -> list[tuple[str, list[str]]]:
    """The accelerators grouped by family, families in FAMILIES order, members sorted."""
    order = [label for _, label, _ in FAMILIES] + [OTHER_FAMILY[0]]
    groups: dict[str, list[str]] = {}
    for hw in sorted(names):
        groups.setdefault(hardware_family(hw)[0], []).append(hw)
    return [(label, groups[label]) for label in order if label in groups]


def _member_index(names, hw) -> int:
    for _, members in family_groups(names):
        if hw in members:
            return members.index(hw)
    return 0


def _hardware_colours(names) -> dict:
    return {hw: hardware_family(hw)[1] for hw in names}


def _linestyle(names, hw) -> str:
    """Members of one family: solid, dashed, dotted, dash-dotted."""
    return FAMILY_STYLES[_member_index(names, hw) % len(FAMILY_STYLES)]


def _marker(names, hw) -> str:
    return FAMILY_MARKERS[_member_index(names, hw) % len(FAMILY_MARKERS)]


def _fits(result):
    frame = result.frontier
    fits = frame.loc[frame["fits"].astype(bool)] if len(frame) else frame
    if len(fits) == 0:
        s = result.scenario
        raise CapplanError(f"nothing to plot: no layout of {s.model} fits in memory between "
                           f"{s.min_gpus} and {s.max_gpus} GPUs", exit_code=INFEASIBLE)
    return fits


def winner_groups(result, objectives=None) -> list[tuple[list[str], dict]]:
    """Winners of ``objectives`` (all by default), identical runs merged, in objective order."""
    groups: list[tuple[list[str], dict]] = []
    for objective in objectives or WINNER_STYLE:
        row = result.best.get(objective)
        if row is None:
            continue
        key = _row_key(row)
        for objs, other in groups:
            if _row_key(other) == key:
                objs.append(objective)
                break
        else:
            groups.append(([objective], row))
    return groups


def _row_key(row) -> tuple:
    return tuple(str(row[k]) for k in layout_key())


def _require_winners(result):
    groups = winner_groups(result)
    if not groups:
        objective = result.scenario.objective
        text = result.infeasible.get(objective) or explain_infeasible(
            result.scenario, result.frontier, (math.inf, None))
        raise CapplanError(f"nothing to plot: {text}", exit_code=INFEASIBLE)
    return groups


def _gpu_axis(ax, lo: float, hi: float) -> None:
    """Log-2 GPU axis with ticks at powers of two labelled 128, 1k, 16k."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    ax.set_xscale("log", base=2)
    first, last = math.floor(math.log2(lo)), math.ceil(math.log2(hi))
    ticks = [2.0**k for k in range(first, last + 1)]
    step = 1 if len(ticks) <= 13 else 2
    ticks = ticks[::step]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: gpu_label(v)))
    ax.set_xlim(lo / 2**0.35, hi * 2**0.35)


def _value_axis(axis, values, *, log: bool | None = None) -> bool:
    """Linear or (for a wide range) log scale with 1-2-5 ticks labelled 150k, 1.2M."""
    from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

    values = [float(v) for v in values if v > 0 and math.isfinite(v)]
    if log is None:
        log = bool(values) and max(values) / min(values) > 15
    setter = axis.axes.set_yscale if axis.axis_name == "y" else axis.axes.set_xscale
    fmt = FuncFormatter(lambda v, _: si_label(v))
    if log:
        setter("log")
        decades = math.log10(max(values) / min(values))
        subs = (1.0, 2.0, 5.0) if decades < 4 else (1.0,)
        axis.set_major_locator(LogLocator(base=10, subs=subs))
        axis.set_minor_formatter(NullFormatter())
    else:
        axis.set_major_locator(MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10]))
    axis.set_major_formatter(fmt)
    return log


def _place_labels(ax, items, obstacles, fontsize=7.5):
    """Annotate ``items`` [(x, y, text)] where they cover the fewest ``obstacles`` (data).

    Eight candidate offsets around each point are scored in axes-fraction space by
    the obstacle points under the text box and by leaving the axes; placed labels
    become obstacles for the next ones.
    """
    to_axes = ax.transScale + ax.transLimits
    bbox = ax.get_window_extent()
    width_pt = max(bbox.width, 1.0) * 72.0 / ax.figure.dpi
    height_pt = max(bbox.height, 1.0) * 72.0 / ax.figure.dpi
    pts = to_axes.transform(np.asarray(obstacles, dtype=float)) if len(obstacles) else (
        np.empty((0, 2)))
    placed = []
    offsets = [(14, 12), (-14, 12), (14, -12), (-14, -12), (24, 0), (-24, 0), (0, 20),
               (0, -20)]
    for x, y, text in items:
        lines = text.split("\n")
        w = (max(len(line) for line in lines) * fontsize * 0.58 + 6) / width_pt
        h = (len(lines) * fontsize * 1.25 + 4) / height_pt
        px, py = to_axes.transform((x, y))
        best = None
        for rank, (dx, dy) in enumerate(offsets):
            ox, oy = px + dx / width_pt, py + dy / height_pt
            x0 = ox if dx > 0 else ox - w if dx < 0 else ox - w / 2
            y0 = oy if dy > 0 else oy - h if dy < 0 else oy - h / 2
            box = (x0, y0, x0 + w, y0 + h)
            inside = ((pts[:, 0] > box[0]) & (pts[:, 0] < box[2]) & (pts[:, 1] > box[1])
                      & (pts[:, 1] < box[3])).sum() if len(pts) else 0
            overlap = sum(max(0.0, min(box[2], b[2]) - max(box[0], b[0]))
                          * max(0.0, min(box[3], b[3]) - max(box[1], b[1])) for b in placed)
            outside = (max(0.0, -box[0]) + max(0.0, box[2] - 1) + max(0.0, -box[1])
                       + max(0.0, box[3] - 1))
            score = inside + 400 * overlap / (w * h) + 1e4 * outside + 0.01 * rank
            if best is None or score < best[0]:
                best = (score, dx, dy, box)
        _, dx, dy, box = best
        placed.append(box)
        ha = "left" if dx > 0 else "right" if dx < 0 else "center"
        va = "bottom" if dy > 0 else "top" if dy < 0 else "center"
        note = ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points", ha=ha,
                           va=va, fontsize=fontsize, zorder=6,
                           bbox=dict(boxstyle="round,pad=0.25", fc="white", ec="0.6", lw=0.6,
                                     alpha=0.92),
                           arrowprops=dict(arrowstyle="-", color="0.35", lw=0.6,
                                           shrinkA=0, shrinkB=4))
        note.set_in_layout(False)


def _finish_labels(fig, jobs) -> None:
    """Lay the figure out once, then place every pending label job (ax, items, obstacles)."""
    root = fig.get_figure(root=True) if hasattr(fig, "get_figure") else fig
    root.draw_without_rendering()
    for ax, items, obstacles in jobs:
        _place_labels(ax, items, obstacles)


def _dense(x, y, log_x=True, log_y=False, n=12):
    """Points along the polyline (x, y), for label placement to avoid lines."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 2:
        return np.c_[x, y]
    fx = np.log(x) if log_x else x
    fy = np.log(y) if log_y else y
    t = np.linspace(0, 1, n)[:, None]
    sx = (fx[:-1] + t * (fx[1:] - fx[:-1])).ravel()
    sy = (fy[:-1] + t * (fy[1:] - fy[:-1])).ravel()
    return np.c_[np.exp(sx) if log_x else sx, np.exp(sy) if log_y else sy]


# --------------------------------------------------------------------------- scaling


def scaling_curves(fits) -> dict[str, pd.DataFrame]:
    """Per accelerator, the best value of each scaling panel's column per GPU count (the
    fitting rows ``fits`` of a plan's frontier), over the sensible counts only: a count
    that a smaller one beats in both wall time and cost is left out, since a cluster that
    large can always run the smaller job (an awkward count such as 41 x 64, which only
    PP41 lays out, is no point of the curve)."""
    columns = [column for column, _, _ in SCALING_PANELS]
    curves = {}
    for hw in sorted(fits["hardware"].unique()):
        best = fits.loc[fits["hardware"] == hw].groupby("gpus")[columns].min().sort_index()
        points = np.column_stack([best.index.to_numpy(float),
                                  best["wall_days"].to_numpy(float),
                                  best["cost_usd"].to_numpy(float)])
        curves[hw] = best.loc[pareto_mask(points)]
    return curves


def _draw_scaling(fig, result, *, legend: str | None = "outside right center",
                  title: str = "Best layout per GPU count (layouts that fit in memory)"):
    fits = _fits(result)
    names = sorted(fits["hardware"].unique())
    colours = _hardware_colours(names)
    axes = fig.subplots(len(SCALING_PANELS), 1, sharex=True)
    lo, hi = float(fits["gpus"].min()), float(fits["gpus"].max())
    s = result.scenario
    jobs, drawn = [], []
    sensible = scaling_curves(fits)
    for ax, (column, label, objectives) in zip(axes, SCALING_PANELS, strict=True):
        obstacles = []
        best_values = []
        curves = {}
        for hw in names:
            curve = sensible[hw][column]
            curves[hw] = curve
            best_values += list(curve.to_numpy(float))
        limit = {"wall_days": s.deadline_days, "cost_usd": s.budget_usd}.get(column)
        log_y = _value_axis(ax.yaxis, best_values + ([limit] if limit else []))
        for hw in names:
            curve = curves[hw]
            x, y = curve.index.to_numpy(float), curve.to_numpy(float)
            ax.plot(x, y, marker=_marker(names, hw), markersize=3, lw=1.4, color=colours[hw],
                    label=hw, ls=_linestyle(names, hw), zorder=3)
            obstacles += _dense(x, y, log_y=log_y).tolist()
        for hw in names:  # knee: ring on the line, dotted line through the panels
            knee = result.knee.get(hw)
            if knee is None:
                continue
            kx = float(knee["gpus"])
            ky = float(curves[hw].get(knee["gpus"], knee[column]))
            ax.axvline(kx, color=colours[hw], ls=":", lw=0.9, alpha=0.8, zorder=1)
            ax.plot([kx], [ky], marker="o", markersize=9, mfc="none", mec=colours[hw], mew=1.6,
                    zorder=4, label="_knee")
        items = []
        for objs, row in winner_groups(result, objectives):
            x, y = float(row["gpus"]), float(row[column])
            ax.plot([x], [y], marker=WINNER_STYLE[objs[0]][1], markersize=11, mfc="gold",
                    mec="black", mew=0.9, zorder=5, label="_winner")
            text = " & ".join(WINNER_STYLE[o][0] for o in objs)
            if (WINNER_STYLE[objs[0]][1], text) not in drawn:
                drawn.append((WINNER_STYLE[objs[0]][1], text))
            items.append((x, y, f"{text}: {row['hardware']}\n{gpu_label(x)} GPUs, "
                          f"{_metric_text(column, y)}"))
        if column == "wall_days" and s.deadline_days is not None:
            ax.axhline(s.deadline_days, color="crimson", ls="--", lw=1)
            ax.annotate(f"deadline {s.deadline_days:g} d", (1, s.deadline_days),
                        xycoords=("axes fraction", "data"), xytext=(-4, 3),
                        textcoords="offset points", ha="right", va="bottom", fontsize=7,
                        color="crimson")
        if column == "cost_usd" and s.budget_usd is not None:
            ax.axhline(s.budget_usd, color="crimson", ls="--", lw=1)
            ax.annotate(f"budget {si_label(s.budget_usd)} USD", (1, s.budget_usd),
                        xycoords=("axes fraction", "data"), xytext=(-4, 3),
                        textcoords="offset points", ha="right", va="bottom", fontsize=7,
                        color="crimson")
        ax.set_ylabel(label)
        ax.grid(True, which="major", alpha=0.3)
        _gpu_axis(ax, lo, hi)
        if log_y:  # room for the labels above and below the curves
            ymin, ymax = ax.get_ylim()
            ax.set_ylim(ymin / 1.4, ymax * 1.4)
        else:
            ymin, ymax = ax.get_ylim()
            pad = 0.12 * (ymax - ymin)
            ax.set_ylim(ymin - pad, ymax + pad)
        if ax is axes[0]:
            _direct_labels(ax, names, colours,
                           {hw: (float(c.index[-1]), float(c.iloc[-1]))
                            for hw, c in curves.items() if len(c)})
        jobs.append((ax, items, np.asarray(obstacles)))
    axes[-1].set_xlabel("GPUs")
    axes[0].set_title(title, fontsize=10)
    if legend:
        _scaling_legend(fig, names, colours, result, drawn, loc=legend)
    return jobs


def _direct_labels(ax, names, colours, ends, fontsize=6.5) -> None:
    """Each accelerator's name right of the panel, at its curve's last point (spread so
    that no two overlap), with a thin leader line: the lines read without the legend."""
    if not ends:
        return
    to_axes = ax.transAxes.inverted()
    placed = []
    for hw, (x, y) in ends.items():
        fy = float(to_axes.transform(ax.transData.transform((x, y)))[1])
        placed.append([min(max(fy, 0.0), 1.0), hw, x, y])
    placed.sort()
    gap = min(0.05, 1.0 / max(len(placed), 1))
    for i in range(1, len(placed)):  # push up, then pull back inside the panel
        placed[i][0] = max(placed[i][0], placed[i - 1][0] + gap)
    overflow = placed[-1][0] - 1.0
    if overflow > 0:
        for item in placed:
            item[0] -= overflow
        for i in range(len(placed) - 2, -1, -1):
            placed[i][0] = min(placed[i][0], placed[i + 1][0] - gap)
    for fy, hw, x, y in placed:
        ax.annotate(hw, xy=(x, y), xycoords="data", xytext=(1.02, fy),
                    textcoords="axes fraction", fontsize=fontsize, color=colours[hw],
                    va="center", ha="left", fontweight="bold",
                    arrowprops=dict(arrowstyle="-", color=colours[hw], lw=0.5, alpha=0.6,
                                    shrinkA=0, shrinkB=2))


def _scaling_legend(fig, names, colours, result, drawn, loc="outside right center"):
    """The legend grouped by accelerator family: one column per family (a header, then its
    members), then the knee and winner markers."""
    from matplotlib.lines import Line2D

    groups = family_groups(names)
    blank = Line2D([], [], ls="none", label=" ")
    extra = [Line2D([], [], ls=":", color="0.3", marker="o", markersize=8, mfc="none",
                    mec="0.3", label=f"knee (marginal scaling\nefficiency "
                                     f"\u2265 {result.scenario.knee_threshold:g})")
             ] if any(k is not None for k in result.knee.values()) else []
    for marker, label in drawn:
        extra.append(Line2D([], [], ls="none", marker=marker, markersize=9, mfc="gold",
                            mec="black", label=label))
    side = loc.split()[1] in ("right", "left")
    rows = max(max(len(m) for _, m in groups) + 1, 1 if side else len(extra))
    columns, headers = [], []
    for label, members in groups:  # small families share a column
        header = Line2D([], [], ls="-", lw=6, color=colours[members[0]], label=label)
        headers.append(label)
        column = [header] + [Line2D([], [], color=colours[hw], marker=_marker(names, hw),
                                    markersize=3, lw=1.4, ls=_linestyle(names, hw), label=hw)
                             for hw in members]
        if columns and not side and len(columns[-1]) + len(column) <= rows:
            columns[-1] += column
        else:
            columns.append(column)
    columns.append(extra)
    handles = [h for column in columns
               for h in column + ([] if side else [blank] * (rows - len(column)))]
    legend = fig.legend(handles=handles, loc=loc, fontsize=7, frameon=False,
                        ncols=1 if side else len(columns), handlelength=2.2,
                        columnspacing=0.8)
    for text in legend.get_texts():
        if text.get_text() in headers:
            text.set_fontweight("bold")
    return legend


def sig3(value: float) -> str:
    """Three significant digits without exponent: 3824.6 -> '3,820', 2.4016 -> '2.4'."""
    rounded = float(f"{value:.3g}")
    return f"{rounded:,.0f}" if abs(rounded) >= 100 else f"{rounded:g}"


def _metric_text(column: str, value: float) -> str:
    if column == "wall_days":
        return f"{sig3(value)} days"
    if column == "cost_usd":
        return f"{si_label(float(f'{value:.3g}'))} USD"
    if column == "energy_mwh":
        return f"{sig3(value)} MWh"
    return sig3(value)


def plot_scaling(result, path, *, force: bool = False) -> Path:
    """Wall days, cost [USD] and energy [MWh] against the GPU count (log x), one line
    per accelerator (best layout per count among those that fit in memory); each
    objective's optimum is marked and labelled, each accelerator's knee ringed."""
    target = check_target(path, force)
    fig = _figure((9.5, 9))
    jobs = _draw_scaling(fig, result)
    fig.suptitle(_title(result), fontsize=10)
    _finish_labels(fig, jobs)
    return _save(fig, target, force)


# --------------------------------------------------------------------------- pareto


def _draw_pareto(fig, result, *, legend: bool = True):
    from matplotlib.colors import LogNorm, Normalize

    groups = _require_winners(result)
    frontier = result.frontier
    feasible = frontier.loc[frontier["feasible"].astype(bool)]
    front = pd.DataFrame(result.pareto)
    names = sorted(feasible["hardware"].unique())
    markers = {hw: HARDWARE_MARKERS[i % len(HARDWARE_MARKERS)] for i, hw in enumerate(names)}
    ax = fig.subplots()
    ax.scatter(feasible["cost_usd"], feasible["energy_mwh"], s=10, color="0.82", zorder=1,
               label="dominated candidates", edgecolors="none")
    days = front["wall_days"].to_numpy(float)
    norm = (LogNorm(days.min(), days.max()) if days.max() / days.min() > 10
            else Normalize(days.min(), days.max()))
    if days.max() == days.min():
        norm = Normalize(days.min() * 0.9, days.max() * 1.1)
    scatter = None
    for hw in names:
        part = front.loc[front["hardware"] == hw]
        if part.empty:
            continue
        scatter = ax.scatter(part["cost_usd"], part["energy_mwh"], c=part["wall_days"],
                             cmap="viridis", norm=norm, marker=markers[hw], s=42,
                             edgecolors="black", linewidths=0.4, zorder=3, label=hw)
    colorbar = fig.colorbar(scatter, ax=ax, pad=0.02)
    colorbar.set_label("wall time [days]")
    if isinstance(norm, LogNorm):
        from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, NullLocator

        # plain numbers on 1-2-5 ticks only; no minor ticks (matplotlib's minor log labels
        # are '6x10^1' beside a major '50')
        colorbar.ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        colorbar.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        colorbar.ax.yaxis.set_minor_locator(NullLocator())
        colorbar.ax.yaxis.set_minor_formatter(NullFormatter())
    all_cost = feasible["cost_usd"].to_numpy(float)
    all_energy = feasible["energy_mwh"].to_numpy(float)
    log_x = _value_axis(ax.xaxis, all_cost)
    log_y = _value_axis(ax.yaxis, all_energy)
    _pad_limits(ax, log_x, log_y)
    items = []
    for objs, row in groups:
        x, y = float(row["cost_usd"]), float(row["energy_mwh"])
        ax.plot([x], [y], marker="o", markersize=13, mfc="none", mec="crimson", mew=1.5,
                zorder=4)
        text = " & ".join(WINNER_STYLE[o][0] for o in objs)
        items.append((x, y, f"{text}: {row['hardware']} \u00d7 {gpu_label(row['gpus'])}\n"
                            f"{sig3(row['wall_days'])} days, {_metric_text('cost_usd', x)}, "
                            f"{sig3(y)} MWh"))
    jobs = [(ax, items, np.c_[all_cost, all_energy])]
    ax.set_xlabel("cost [USD]")
    ax.set_ylabel("energy [MWh]")
    ax.grid(True, which="major", alpha=0.3)
    ax.set_title(f"Pareto front over time, cost and energy ({len(front)} plans)", fontsize=10)
    if legend:
        from matplotlib.lines import Line2D

        handles = [Line2D([], [], ls="none", marker=markers[hw], color="0.5", mec="black",
                          mew=0.4, markersize=6, label=hw)
                   for hw in names if (front["hardware"] == hw).any()]
        handles.append(Line2D([], [], ls="none", marker="o", color="0.82", markersize=4,
                              label="dominated"))
        handles.append(Line2D([], [], ls="none", marker="o", mfc="none", mec="crimson",
                              mew=1.5, markersize=9, label="winner"))
        fig.legend(handles=handles, fontsize=8, loc="outside lower center", frameon=False,
                   ncols=min(len(handles), 6))
    return jobs


def _pad_limits(ax, log_x: bool, log_y: bool, frac: float = 0.08) -> None:
    for get, set_, log in ((ax.get_xlim, ax.set_xlim, log_x), (ax.get_ylim, ax.set_ylim, log_y)):
        lo, hi = get()
        if log:
            f = (hi / lo) ** frac
            set_(lo / f, hi * f)
        else:
            d = (hi - lo) * frac
            set_(lo - d, hi + d)


def plot_pareto(result, path, *, force: bool = False) -> Path:
    """Pareto front (time, cost, energy) as cost against energy, coloured by wall days."""
    target = check_target(path, force)
    _require_winners(result)
    fig = _figure((9, 6.5))
    jobs = _draw_pareto(fig, result)
    fig.suptitle(_title(result), fontsize=10)
    _finish_labels(fig, jobs)
    return _save(fig, target, force)


# --------------------------------------------------------------------------- breakdown


def breakdown_rows(result) -> list[tuple[str, dict, dict, dict]]:
    """(label, row, step parts [s], run parts [s]) for each distinct winner."""
    out = []
    for objs, row in _require_winners(result):
        label = (" & ".join(WINNER_STYLE[o][0] for o in objs) + "\n"
                 + f"{row['hardware']} \u00d7 {gpu_label(row['gpus'])}\n{layout_text(row)}")
        step = {name: max(0.0, float(row[key])) for name, key in step_parts()}
        run = {name: max(0.0, float(v)) for name, v in time_breakdown(row).items()}
        out.append((label, row, step, run))
    return out


def _draw_breakdown(fig, result, *, legend: bool = True):
    import matplotlib
    rows = breakdown_rows(result)
    cmap = matplotlib.colormaps["tab20"]
    part_colour = part_colours()
    axes = fig.subplots(1, 2, sharey=True)
    y = np.arange(len(rows))[::-1]
    used = {}
    panels = ((2, "step time", lambda r: f"{r['step_time_s']:.3g} s"),
              (3, "whole run (with checkpoints and failures)",
               lambda r: f"{r['wall_days']:.3g} days"))
    for ax, (index, title, total) in zip(axes, panels, strict=True):
        for yi, entry in zip(y, rows, strict=True):
            parts = entry[index]
            whole = sum(parts.values()) or 1.0
            left = 0.0
            for name, value in parts.items():
                share = 100.0 * value / whole
                if share < 0.05:
                    continue
                colour = cmap(part_colour[name])
                ax.barh(yi, share, left=left, height=0.62, color=colour, edgecolor="white",
                        linewidth=0.5)
                used.setdefault(name, colour)
                if share >= 7:
                    r, g, b, _ = colour
                    dark = 0.299 * r + 0.587 * g + 0.114 * b < 0.55
                    ax.text(left + share / 2, yi, f"{share:.0f}%", ha="center", va="center",
                            fontsize=7, color="white" if dark else "black")
                left += share
            ax.text(101.5, yi, total(entry[1]), ha="left", va="center", fontsize=8)
        ax.set_xlim(0, 122)
        ax.set_xticks([0, 25, 50, 75, 100])
        ax.set_xlabel(f"share of {title.split(' (')[0]} [%]")
        ax.set_title(title, fontsize=9.5)
        ax.grid(True, axis="x", alpha=0.3)
        ax.set_axisbelow(True)
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
        ax.spines["bottom"].set_bounds(0, 100)
    axes[0].set_yticks(y, [entry[0] for entry in rows], fontsize=7.5)
    axes[0].set_ylim(-0.6, len(rows) - 0.4)
    if legend:
        from matplotlib.patches import Patch

        order = [name for name in part_colour if name in used]
        fig.legend(handles=[Patch(color=used[n], label=n) for n in order],
                   loc="outside lower center", ncols=min(len(order), 5), fontsize=8,
                   frameon=False)
    return axes


def plot_breakdown(result, path, *, force: bool = False) -> Path:
    """Stacked bars of where the step time and the whole-run time of each winner go."""
    target = check_target(path, force)
    rows = breakdown_rows(result)
    fig = _figure((10, 1.25 * len(rows) + 2.2))
    _draw_breakdown(fig, result)
    fig.suptitle(f"Where the time goes: {_title(result)}", fontsize=10)
    return _save(fig, target, force)


# --------------------------------------------------------------------------- all three


def plot_plan(result, path, *, force: bool = False) -> Path:
    """Scaling (left), Pareto front and time breakdown (right) in one figure."""
    target = check_target(path, force)
    _fits(result)
    has_winners = bool(winner_groups(result))
    fig = _figure((17, 10.5))
    left, right = fig.subfigures(1, 2, width_ratios=[1.0, 1.05], wspace=0.02)
    jobs = _draw_scaling(left, result, legend="outside lower center")
    if has_winners:
        top, bottom = right.subfigures(2, 1, height_ratios=[1.25, 1.0], hspace=0.02)
        jobs += _draw_pareto(top, result)
        _draw_breakdown(bottom, result)
    else:
        ax = right.subplots()
        ax.axis("off")
        objective = result.scenario.objective
        ax.text(0.5, 0.5, _wrap(result.infeasible.get(objective, "No plan meets the constraints.")),
                ha="center", va="center", fontsize=10, transform=ax.transAxes)
    fig.suptitle(_title(result), fontsize=11)
    _finish_labels(fig, jobs)
    return _save(fig, target, force)


def _wrap(text: str, width: int = 70) -> str:
    """A message (it may quote the user's input) as plot text, wrapped at ``width``."""
    return "\n".join(textwrap.wrap(plot_text(text), width))


# --------------------------------------------------------------------------- phases

#: Panels of a phases plan's winner: (phase column, axis label).
PHASE_PANELS = (("wall_days", "wall time [days]"), ("energy_mwh", "energy [MWh]"),
                ("cost_usd", "cost [USD]"))


def phase_totals_view(result) -> SimpleNamespace:
    """A phases plan (:class:`planner.engine.search.phase_plan.PhasePlan`) as the scaling panels
    read a plan: one row per (hardware, gpus) and objective with the run's totals (each
    phase at its best layout for that objective), so a panel's per-GPU-count minimum of a
    column is the objective's own total; the winners carry their phases' layouts as their
    layout, so two objectives merge only when every phase's layout is the same."""
    frames = [f.assign(fits=True) for f in result.totals.values() if len(f)]
    frontier = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["hardware", "gpus", "fits"])
    best = {}
    for objective, row in result.best.items():
        if row is None:
            continue
        layouts = " / ".join(layout_text(p) for p in row["phases"])
        best[objective] = {**{k: layouts for k in layout_key()}, **row}
    # the run's tokens are its phases' (the scenario's own count is not used by a phases plan)
    scenario = result.scenario.with_(tokens=sum(p.tokens for p in result.phases))
    return SimpleNamespace(scenario=scenario, frontier=frontier, best=best, knee={},
                           infeasible=result.infeasible)


def _draw_phases(fig, result) -> None:
    """The headline winner's phases, one bar each, in the PHASE_PANELS columns."""
    s = result.scenario
    row = result.best[s.objective]
    phases = row["phases"]
    axes = fig.subplots(len(PHASE_PANELS), 1, sharex=True)
    x = np.arange(len(phases))
    for ax, (column, label) in zip(axes, PHASE_PANELS, strict=True):
        values = [float(p[column]) for p in phases]
        ax.bar(x, values, color="#4575b4", width=0.6, zorder=3)
        for xi, v in zip(x, values, strict=True):
            ax.annotate(_metric_text(column, v), (xi, v), xytext=(0, 2),
                        textcoords="offset points", ha="center", va="bottom", fontsize=7)
        ax.set_ylabel(label)
        ax.yaxis.set_major_formatter(_si_formatter())
        ax.set_ylim(0, max(values) * 1.18 if max(values) > 0 else 1)
        ax.grid(True, axis="y", alpha=0.3)
    axes[-1].set_xticks(x, [f"{plot_text(p['name'])}\n{count_text(p['tokens'])} tokens\n"
                            + textwrap.fill(layout_text(p), 18) for p in phases], fontsize=7)
    label = WINNER_STYLE.get(s.objective, (s.objective,))[0]
    axes[0].set_title(f"Phases of the {label} plan: {row['hardware']} x "
                      f"{gpu_label(row['gpus'])} GPUs, {sig3(row['wall_days'])} days in all",
                      fontsize=10)


def _si_formatter():
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda v, _: si_label(v))


def plot_phases(result, path, *, force: bool = False) -> Path:
    """A phases plan (``capplan plan --scenario`` with ``[[phases]]`` and ``--plot``): the
    run's totals against the GPU count per accelerator, the winners marked (left), and the
    headline winner's phases (right)."""
    target = check_target(path, force)
    view = phase_totals_view(result)
    if result.best.get(result.scenario.objective) is None:
        raise CapplanError("nothing to plot: " + result.infeasible.get(
            result.scenario.objective, "no plan"), exit_code=INFEASIBLE)
    fig = _figure((15, 9.5))
    left, right = fig.subfigures(1, 2, width_ratios=[1.1, 1.0], wspace=0.02)
    jobs = _draw_scaling(left, view, legend="outside lower center",
                         title="Whole run per GPU count, each phase at its best layout")
    _draw_phases(right, result)
    fig.suptitle(f"{_title(view)}, {len(result.phases)} phases", fontsize=11)
    _finish_labels(fig, jobs)
    return _save(fig, target, force)


PLOTS = {"scaling": plot_scaling, "pareto": plot_pareto, "breakdown": plot_breakdown,
         "plan": plot_plan}

__all__ = ["plot_scaling", "plot_pareto", "plot_breakdown", "plot_plan", "plot_phases",
           "check_target", "PLOTS", "SUFFIXES"]


# --------------------------------------------------------------------------- checkpointing

#: Panels of the checkpointing study: (row key, y label, scale to the shown unit).
CHECKPOINT_PANELS = (
    ("waste_pct", "wall time lost to fault tolerance [%]", 1.0),
    ("fault_tolerance_mwh", "energy spent on fault tolerance [MWh]", 1.0),
    ("fault_tolerance_usd", "cost of fault tolerance [M USD]", 1e-6),
)
SCHEME_COLOURS = {"sync": "#d62728", "async": "#1f77b4", "in-memory": "#2ca02c",
                  "gockpt": "#9467bd"}


def plot_checkpoint_study(rows: list[dict], path, *, title: str = "",
                          force: bool = False) -> Path:
    """Three panels against GPU count, one line per scheme (and line style per MTBF):
    the wall-time share, the energy and the cost that fault tolerance takes."""
    target = check_target(path, force)
    fig = _figure((12.0, 3.9))
    axes = fig.subplots(1, 3)
    mtbfs = list(dict.fromkeys(r["gpu_mtbf_hours"] for r in rows))
    styles = ["-", "--", ":", "-."]
    counts = sorted({r["gpus"] for r in rows})
    for ax, (key, label, scale) in zip(axes, CHECKPOINT_PANELS, strict=True):
        values = []
        for scheme in dict.fromkeys(r["scheme"] for r in rows):
            for i, mtbf in enumerate(mtbfs):
                line = sorted((r for r in rows if r["scheme"] == scheme
                               and r["gpu_mtbf_hours"] == mtbf), key=lambda r: r["gpus"])
                x = [r["gpus"] for r in line]
                y = [(100 * (1 - r["ettr"]) if key == "waste_pct" else r[key]) * scale
                     for r in line]
                values += y
                name = scheme if len(mtbfs) == 1 else f"{scheme}, {mtbf:,.0f} h/GPU"
                ax.plot(x, y, styles[i % len(styles)], marker="o", markersize=3.5,
                        color=SCHEME_COLOURS.get(scheme), label=name)
        _gpu_axis(ax, counts[0], counts[-1])
        _value_axis(ax.yaxis, values)
        ax.set_xlabel("GPUs")
        ax.set_ylabel(label)
        ax.grid(True, which="major", alpha=0.3)
    axes[0].legend(fontsize=8, frameon=False)
    if title:  # model, accelerator, tokens, objective (checkpoint_study.figure_title)
        fig.suptitle(f"What fault tolerance costs, by checkpoint scheme\n{plot_text(title)}",
                     fontsize=10)
    return _save(fig, target, force)
