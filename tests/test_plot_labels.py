"""What the figures say, read from the matplotlib figures' texts (not pixels): the title
states model, tokens and objective; the dashboard groups accelerators by family with few
colours and names every line; log colour-bar ticks are plain numbers; tornado bars carry
the input's meaning, name and base value with its unit."""

import re

import pytest

pytest.importorskip("matplotlib")

from planner.report import plot  # noqa: E402


@pytest.fixture(scope="module")
def result():
    from planner import plan

    return plan(model="llama2-7b", tokens=1.5e12,
                hardware=["h100-sxm", "h200", "a100-80gb", "b200", "mi300x", "tpu-v5p"],
                max_gpus=512, objective="energy")


@pytest.fixture
def saved(monkeypatch):
    """The figures plot_* would save, kept open for inspection."""
    import matplotlib.pyplot as plt

    figures = []
    monkeypatch.setattr(plot, "_save", lambda fig, target, force=False: figures.append(fig) or target)
    yield figures
    for fig in figures:
        plt.close(fig)


def _all_texts(fig):
    texts = [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))]
    return [t for t in texts if t]


def test_family_colours_are_few_and_shared_within_a_generation():
    names = ["h100-sxm", "h100-pcie", "h200", "h800", "b200", "b300", "gb200", "gb300",
             "a100-40gb", "a100-80gb", "l40s", "mi250x", "mi300x", "mi325x", "mi355x",
             "tpu-v4", "tpu-v5p", "tpu-v6e", "gaudi3", "trn2"]
    colours = plot._hardware_colours(names)
    assert len(set(colours.values())) == 7  # 20 accelerators, 7 families
    assert colours["h100-sxm"] == colours["h200"] != colours["b200"] == colours["gb300"]
    assert colours["mi300x"] == colours["mi355x"] != colours["tpu-v5p"]
    assert plot.hardware_family("my-chip")[0] == "other"
    # members of one family are told apart by line style and marker
    for _, members in plot.family_groups(names):
        styles = {(plot._linestyle(names, hw), plot._marker(names, hw)) for hw in members}
        assert len(styles) == len(members)


def test_dashboard_title_legend_and_direct_labels(result, saved, tmp_path):
    plot.plot_plan(result, tmp_path / "plan.png")
    (fig,) = saved
    title = fig._suptitle.get_text()
    assert title.startswith("llama2-7b on 1.5T tokens, objective: least energy (energy)")
    assert "1.5e+12" not in " ".join(_all_texts(fig))
    from matplotlib.legend import Legend

    scaling = next(leg for leg in fig.findobj(Legend)
                   if "knee" in " ".join(t.get_text() for t in leg.get_texts()))
    legend = [t.get_text() for t in scaling.get_texts()]
    for family in ("NVIDIA Hopper", "NVIDIA Blackwell", "NVIDIA Volta/Ampere/Ada", "AMD Instinct",
                   "Google TPU"):
        assert family in legend
    bold = [t.get_text() for t in scaling.get_texts() if t.get_fontweight() == "bold"]
    assert "NVIDIA Hopper" in bold and "h100-sxm" not in bold
    # every accelerator drawn is named at the end of its line in the wall-time panel
    top = next(ax for ax in fig.axes if ax.get_ylabel() == "wall time [days]")
    named = {t.get_text() for t in top.texts}
    drawn = set(result.frontier.loc[result.frontier["fits"].astype(bool), "hardware"])
    assert drawn <= named, drawn - named


def test_log_colour_bar_ticks_are_plain_numbers(saved, tmp_path):
    from planner import plan

    wide = plan(model="llama3-8b", tokens=2e12, hardware=["h100-sxm", "a100-80gb", "b200"],
                max_gpus=4096)
    plot.plot_pareto(wide, tmp_path / "pareto.png")
    (fig,) = saved
    fig.canvas.draw()
    bar = next(ax for ax in fig.axes if ax.get_ylabel() == "wall time [days]")
    assert bar.get_yscale() == "log"
    major = [t.get_text() for t in bar.yaxis.get_ticklabels() if t.get_text()]
    minor = [t.get_text() for t in bar.yaxis.get_ticklabels(minor=True) if t.get_text()]
    assert major and not minor
    for text in major:
        assert re.fullmatch(r"[0-9.,]+", text), text  # no '6x10^1' mathtext
        assert re.fullmatch(r"[125]0*(\.0*)?|0\.0*[125]", text), text


def test_tornado_bars_have_meaning_name_unit_and_base_value():
    import matplotlib.pyplot as plt

    from planner.report.tornado import bar_label, tornado_figure

    rows = [{"input": "peak_flops_per_s", "value": 9.894e14, "unit": "FLOP/s", "days": -0.8,
             "cost": -0.8, "energy": -0.86, "co2e": -0.86},
            {"input": "price_usd_per_gpu_hour", "value": 2.95, "unit": "USD/h", "days": 0.0,
             "cost": 1.0, "energy": 0.0, "co2e": 0.0},
            {"input": "tokens", "value": 15e12, "unit": "1", "days": 1.0, "cost": 1.0,
             "energy": 1.0, "co2e": 1.0},
            {"input": "grid_intensity_g_per_kwh", "value": 369.0, "unit": "gCO2e/kWh",
             "days": 0.0, "cost": 0.0, "energy": 0.0, "co2e": 0.98}]
    assert bar_label(rows[0]) == "dense peak at the chosen precision\npeak_flops_per_s = 989 TFLOP/s"
    assert bar_label(rows[1]).endswith("price_usd_per_gpu_hour = 2.95 USD/GPU-h")
    assert bar_label(rows[2]).endswith("tokens = 15T tokens")
    assert bar_label(rows[3]).endswith("= 369 gCO2e/kWh")
    fig = tornado_figure(rows, title="Elasticities for llama3-70b on 15T tokens, 1,024 x h100-sxm")
    try:
        ax = fig.axes[0]
        ticks = [t.get_text() for t in ax.get_yticklabels()]
        assert ticks == [bar_label(r) for r in rows][::-1]  # largest on top
        assert "15T tokens" in ax.get_title() and "llama3-70b" in ax.get_title()
        assert "no search objective" in ax.get_title()
        assert [t.get_text() for t in ax.get_legend().get_texts()] == [
            "wall time", "cost", "energy", "CO2e"]
    finally:
        plt.close(fig)


def test_sensitivity_plot_title_states_model_tokens_and_layout(monkeypatch, tmp_path, capsys):
    from planner.cli.main import main
    from planner.report import tornado as module

    seen = {}
    real = module.tornado
    monkeypatch.setattr(module, "tornado",
                        lambda rows, path, **kw: seen.update(kw) or real(rows, path, **kw))
    code = main(["sensitivity", "--model", "llama3-8b", "--tokens", "2e12", "--gpus", "64",
                 "--plot", str(tmp_path / "t.png")])
    capsys.readouterr()
    assert code == 0 and (tmp_path / "t.png").stat().st_size > 0
    assert seen["title"].startswith("Elasticities for llama3-8b on 2T tokens, 64 x ")


def test_checkpoint_study_title_states_model_tokens_and_objective(saved, tmp_path):
    from planner.cli.main import main

    code = main(["checkpoint", "-m", "llama3-8b", "-H", "h100-sxm", "--gpus", "64,512",
                 "--tokens", "2T", "--plot", str(tmp_path / "ckpt.png"), "-o",
                 str(tmp_path / "ckpt.csv")])
    assert code == 0
    (fig,) = saved
    title = fig._suptitle.get_text()
    assert "llama3-8b on h100-sxm, 2T tokens" in title
    assert "objective: fastest layout that fits in memory at each GPU count" in title
    assert "2e+12" not in title
