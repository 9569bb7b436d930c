"""Figures of a plan: files written in the format of the suffix, CLI errors, content."""

import sys
import xml.etree.ElementTree as ET

import pytest

from planner.cli.main import main
from planner.errors import CapplanError

pytest.importorskip("matplotlib")

from planner.report import plot  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SMALL = ["--model", "llama2-7b", "--tokens", "1e12", "--hardware", "h100-sxm,a100-80gb",
         "--max-gpus", "512"]


@pytest.fixture(scope="module")
def result():
    from planner import plan

    return plan(model="llama2-7b", tokens=1e12, hardware=["h100-sxm", "a100-80gb"],
                max_gpus=512)


def run(capsys, args):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("kind", sorted(plot.PLOTS))
def test_each_plot_is_a_png(result, tmp_path, kind):
    path = tmp_path / f"{kind}.png"
    written = plot.PLOTS[kind](result, path)
    assert written == path and path.stat().st_size > 10_000
    assert path.read_bytes()[:8] == PNG_MAGIC


def test_svg_and_pdf_follow_the_suffix(result, tmp_path):
    svg = tmp_path / "scaling.svg"
    plot.plot_scaling(result, svg)
    assert ET.parse(svg).getroot().tag.endswith("svg")
    pdf = tmp_path / "pareto.PDF"
    plot.plot_pareto(result, pdf)
    assert pdf.read_bytes()[:5] == b"%PDF-"


def test_refuses_to_overwrite_without_force(result, tmp_path):
    path = tmp_path / "b.png"
    path.write_bytes(b"keep")
    with pytest.raises(CapplanError, match="--force"):
        plot.plot_breakdown(result, path)
    assert path.read_bytes() == b"keep"
    plot.plot_breakdown(result, path, force=True)
    assert path.read_bytes()[:8] == PNG_MAGIC


def test_unknown_suffix_lists_the_allowed_ones(result, tmp_path):
    with pytest.raises(CapplanError, match=r"\.png, \.svg, \.pdf") as info:
        plot.plot_scaling(result, tmp_path / "x.jpg")
    assert info.value.exit_code == 2
    assert not (tmp_path / "x.jpg").exists()


def test_missing_matplotlib_gives_a_clear_message(result, tmp_path, monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(CapplanError) as info:
        plot.plot_scaling(result, tmp_path / "s.png")
    assert str(info.value) == "matplotlib is not installed; pip install 'capplan[plot]'"
    assert not (tmp_path / "s.png").exists()


def test_gpu_tick_labels():
    assert [plot.gpu_label(n) for n in (8, 128, 512, 1024, 1536, 16384)] == [
        "8", "128", "512", "1k", "1.5k", "16k"]
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    plot._gpu_axis(ax, 8, 16384)
    labels = [ax.xaxis.get_major_formatter()(t) for t in ax.get_xticks()]
    plt.close(fig)
    assert "128" in labels and "1k" in labels and "16k" in labels
    assert plot.si_label(150_000) == "150k" and plot.si_label(1.2e6) == "1.2M"


def test_winners_merged_and_labelled(result):
    groups = plot.winner_groups(result)
    assert sorted(o for objs, _ in groups for o in objs) == sorted(plot.WINNER_STYLE)
    keys = [plot._row_key(row) for _, row in groups]
    assert len(set(keys)) == len(keys)  # identical winners share one group
    for objs, row in groups:
        assert all(plot._row_key(result.best[o]) == plot._row_key(row) for o in objs)
    import matplotlib.pyplot as plt

    fig = plt.figure(layout="constrained")
    jobs = plot._draw_scaling(fig, result)
    plot._finish_labels(fig, jobs)
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    plt.close(fig)
    assert any(t.startswith(f"fastest: {result.best['time']['hardware']}") for t in texts)
    assert any(t.startswith("cheapest") for t in texts)
    assert any(t.startswith("least energy") for t in texts)
    assert any("least carbon" in t for t in texts)
    assert {"h100-sxm", "a100-80gb"} <= set(legend)
    assert any(t.startswith("knee") for t in legend)
    # the labels stay inside their axes
    for ax in fig.axes:
        box = ax.get_window_extent()
        for t in ax.texts:
            if t.get_text().startswith(("fastest", "cheapest", "least")):
                tb = t.get_window_extent()
                assert box.x0 - 1 <= tb.x0 and tb.x1 <= box.x1 + 1
                assert box.y0 - 1 <= tb.y0 and tb.y1 <= box.y1 + 1


def test_breakdown_rows_sum_to_totals(result):
    for _, row, step, run in plot.breakdown_rows(result):
        assert sum(step.values()) == pytest.approx(row["step_time_s"], rel=1e-9)
        assert sum(run.values()) == pytest.approx(row["wall_time_s"], rel=1e-6)


def test_cli_plot_scaling(capsys, tmp_path):
    path = tmp_path / "x.png"
    code, out, err = run(capsys, ["plot", "scaling", "-o", str(path), *SMALL])
    assert code == 0 and out == ""
    assert path.read_bytes()[:8] == PNG_MAGIC
    assert f"wrote {path}" in err


def test_cli_refuses_overwrite_and_force_overwrites(capsys, tmp_path):
    path = tmp_path / "x.png"
    path.write_bytes(b"old")
    code, out, err = run(capsys, ["plot", "pareto", "-o", str(path), *SMALL])
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("capplan: error:") and "--force" in err
    assert path.read_bytes() == b"old"
    code, _, _ = run(capsys, ["plot", "pareto", "-o", str(path), "--force", *SMALL])
    assert code == 0 and path.read_bytes()[:8] == PNG_MAGIC


@pytest.mark.parametrize("args, needle", [
    (["plot", "scaling", "-o", "fig.gif"], ".png, .svg, .pdf"),
    (["plot", "scalng", "-o", "fig.png"], "did you mean: scaling"),
    (["plot", "scaling"], "--output"),
])
def test_cli_usage_errors_are_one_line_exit_2(capsys, tmp_path, monkeypatch, args, needle):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, [*args, *SMALL])
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and needle in err
    assert list(tmp_path.iterdir()) == []


def test_cli_infeasible_exit_1(capsys, tmp_path):
    path = tmp_path / "p.svg"
    code, _, err = run(capsys, ["plot", "breakdown", "-o", str(path), "--model", "llama2-7b",
                                "--tokens", "1e12", "-H", "h100-sxm", "--max-gpus", "64",
                                "--deadline-days", "1"])
    assert code == 1 and "deadline" in err and err.count("\n") == 1
    assert not path.exists()


def test_plan_figure_without_a_feasible_plan_says_why(tmp_path):
    from planner import plan

    tight = plan(model="llama2-7b", tokens=1e12, hardware=["h100-sxm"], max_gpus=64,
                 deadline_days=1)
    assert not plot.winner_groups(tight)
    path = plot.plot_plan(tight, tmp_path / "p.png")
    assert path.read_bytes()[:8] == PNG_MAGIC
    with pytest.raises(CapplanError, match="deadline") as info:
        plot.plot_pareto(tight, tmp_path / "q.png")
    assert info.value.exit_code == 1
