"""``capplan evaluate`` on a layout that does not fit in memory: exit 2 and one line naming
the shortfall, unless it is over its HBM by less than the memory model's error on published
runs that ran (then timed, with a warning) (docs/quickstart.md); the Python API answers it
with ``fits`` False."""

import pytest

from planner import evaluate
from planner.cli.main import main

#: Llama 3.1 405B at TP8 PP4 on 16,384 H100, 16,384 sequences in micro-batches of 4: 321.7 GB
#: per GPU with the stack's selective recompute, 266.6 GB of it activations, and 126.2 GB
#: (71.0 GB of activations) with every module Megatron-Core can recompute selectively (1.6x
#: the HBM); full recompute fits.  Every size, the ZeRO stage and the recompute given (sizes left out are searched,
#: and the search finds a layout that fits; a ZeRO stage left out is raised where nothing
#: fits at the stack's).
TOO_BIG = ["evaluate", "-m", "llama3.1-405b", "-H", "h100-sxm", "-n", "16384", "--cp", "1",
           "--ep", "1", "--vp", "1", "--micro-batch", "4", "--global-batch", "16384",
           "--zero", "1", "--recompute", "selective", "--tp", "8", "--pp", "4"]
#: Llama 3.1 405B at TP8 PP4 on 16,384 H100, 2,048 sequences one at a time: 121.8 GB per
#: GPU with the stack's selective recompute (none of its modules), 72.9 GB with the norms
#: and MLPs recomputed too.
MODULES_FIT = ["evaluate", "-m", "llama3.1-405b", "-H", "h100-sxm", "-n", "16384", "--cp",
               "1", "--ep", "1", "--vp", "1", "--micro-batch", "1", "--zero", "1",
               "--tp", "8", "--pp", "4"]


def _run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("fmt", ["table", "json", "csv", "markdown"])
def test_a_layout_that_does_not_fit_is_one_line_and_exit_2(capsys, fmt):
    code, out, err = _run(capsys, [*TOO_BIG, "-f", fmt])
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("capplan: error: the layout does not fit")
    line = err
    # refused at the list that comes closest, every module Megatron-Core recomputes
    # selectively (the stack's own list needs 321.7 GB: test_the_api_answers_the_stacks_list)
    assert ("recompute selective (core_attn, layernorm, mlp), ZeRO-1 needs 126.2 GB per GPU "
            "(activations 71.0 GB)") in line
    assert "h100-sxm has 80.0 GB" in line
    assert "--recompute full" in line and "capplan plan" in line
    assert "a smaller --micro-batch" in line.partition("to fit try")[2]


def test_the_hint_follows_the_largest_term(capsys):
    """ZeRO-0 on 64 GPUs: the optimizer states (104.3 GB) are the largest term."""
    code, _, err = _run(capsys, ["evaluate", "-m", "llama3-70b", "-n", "64", "--tp", "8",
                                 "--pp", "1", "--zero", "0"])
    assert code == 2
    assert "(optimizer states 104.3 GB)" in err and "to fit try --zero 1 or more --tp/--pp" in err


def test_the_fitting_layout_it_points_to_answers(capsys):
    code, out, _ = _run(capsys, [*TOO_BIG[:-2], "--pp", "16", "--recompute", "full", "-f",
                                 "json"])
    assert code == 0 and '"fits": true' in out


def test_a_recompute_left_out_is_full_where_selective_does_not_fit(capsys):
    # the same layout without --recompute: full recompute fits it (Megatron-Core's answer
    # to activations that no module list brings under the HBM), and stderr says so
    without = [a for a in TOO_BIG if a not in ("--recompute", "selective")]
    code, out, err = _run(capsys, [*without, "-f", "json"])
    assert code == 0 and '"fits": true' in out and '"recompute": "full"' in out
    assert '"memory_per_gpu_bytes": 763' in out  # 76.3 GB
    assert "recompute: full, as no layout of the sizes given fits in memory with selective" \
        in err
    # a layout that fits with selective keeps it, and nothing is said
    code, out, err = _run(capsys, [*MODULES_FIT[:-2], "--pp", "16", "-f", "json"])
    assert code == 0 and '"recompute": "selective"' in out and "recompute:" not in err
    assert '"recompute_modules": null' in out and "recompute modules" not in err
    # the API chooses as the command does
    row = evaluate(model="llama3.1-405b", hardware="h100-sxm", gpus=16384, tp=8, pp=4, cp=1,
                   ep=1, vp=1, micro_batch=4, global_batch=16384, zero=1, as_frame=False)
    assert row["recompute"] == "full" and bool(row["fits"])


def test_selective_recompute_takes_the_modules_that_make_it_fit(capsys):
    """121.8 GB with the stack's list: given selective, the command recomputes the norms
    and the MLPs too (72.9 GB) and names the modules; left to choose, a dense run takes the
    norms alone and then full recompute, as dense recipes that do not fit do; the Python
    API answers the stack's list as asked, with fits False."""
    code, out, err = _run(capsys, [*MODULES_FIT, "--recompute", "selective", "-f", "json"])
    assert code == 0 and '"fits": true' in out and '"recompute": "selective"' in out
    assert '"recompute_modules": "layernorm,mlp"' in out
    assert '"memory_per_gpu_bytes": 729' in out  # 72.9 GB
    assert ("capplan: recompute modules: layernorm, mlp, as the layout does not fit in "
            "memory with the stack's (none) (--recompute-modules chooses others)") in err
    code, out, err = _run(capsys, [*MODULES_FIT, "-f", "json"])
    assert code == 0 and '"fits": true' in out and '"recompute": "full"' in out
    assert "recompute modules" not in err
    # a list given is the run's, fitting or not
    code, _, err = _run(capsys, [*MODULES_FIT, "--recompute-modules", "layernorm"])
    assert code == 2 and "does not fit" in err
    row = evaluate(model="llama3.1-405b", hardware="h100-sxm", gpus=16384, tp=8, pp=4, cp=1,
                   ep=1, vp=1, micro_batch=1, zero=1, recompute="selective", as_frame=False)
    assert not bool(row["fits"])
    assert row["memory_per_gpu_bytes"] == pytest.approx(121.8e9, rel=5e-4)


def test_a_zero_stage_left_out_is_raised_where_nothing_fits_at_the_stacks(capsys):
    """Qwen3-235B-A22B at TP2 EP8 on 256 H100 with full recompute (Megatron-MoE-ModelZoo,
    which ran it with Megatron-FSDP): 98.7 GB at the stack's ZeRO-1, 64.7 GB with the
    gradients sharded too (ZeRO-2); --zero 1 given is refused."""
    qwen = ["evaluate", "-m", "qwen3-235b-a22b", "-H", "h100-sxm", "-n", "256", "--tp", "2",
            "--pp", "1", "--cp", "1", "--ep", "8", "--vp", "1", "--micro-batch", "4",
            "--global-batch", "2048", "--seq-len", "4096", "--recompute", "full",
            "--stack", "megatron-core-moe-deepep"]
    code, out, err = _run(capsys, [*qwen, "-f", "json"])
    assert code == 0 and '"fits": true' in out and '"zero": 2' in out
    assert '"memory_per_gpu_bytes": 647' in out  # 64.7 GB
    assert ("capplan: ZeRO-2, as the layout does not fit in memory with the stack's ZeRO-1 "
            "(--zero chooses another)") in err
    code, _, err = _run(capsys, [*qwen, "--zero", "1"])
    assert code == 2 and "needs 98.7 GB per GPU" in err
    # where no stage fits, the refusal is at ZeRO-3 and names what else would shrink it
    code, _, err = _run(capsys, ["evaluate", "-m", "llama3.1-405b", "-H", "h100-sxm", "-n",
                                 "8", "--tp", "8", "--pp", "1", "--cp", "1", "--vp", "1",
                                 "--micro-batch", "1", "--recompute", "full"])
    assert code == 2 and "recompute full, ZeRO-3 needs" in err
    assert "--zero" not in err.partition("to fit try")[2]


def test_the_api_answers_the_stacks_list():
    row = evaluate(model="llama3.1-405b", hardware="h100-sxm", gpus=16384, tp=8, pp=4, cp=1,
                   ep=1, vp=1, micro_batch=4, global_batch=16384, zero=1,
                   recompute="selective", as_frame=False)
    assert not bool(row["fits"])
    assert row["memory_per_gpu_bytes"] == pytest.approx(321.7e9, rel=5e-4)
    assert row["activation_bytes"] == pytest.approx(266.6e9, rel=5e-4)


def test_the_api_answers_with_fits_false():
    row = evaluate(model="llama3.1-405b", hardware="h100-sxm", gpus=16384, tp=8, pp=4, cp=1,
                   ep=1, vp=1, micro_batch=1, recompute="selective", as_frame=False)
    assert row["fits"] is False or not bool(row["fits"])
    assert row["memory_per_gpu_bytes"] == pytest.approx(121.8e9, rel=5e-4)
    assert row["step_time_s"] > 0


#: Meta's Llama 3 405B layout on 8,192 H100 (arXiv:2407.21783 Table 4: TP8 CP1 PP16 DP64,
#: 16M-token batches of 8,192-token sequences), which ran: 81.8 GB per GPU in the memory
#: model (1.02x the HBM: the second pipeline rank, 15 micro-batches of 8 layers, is the
#: busiest), within its error on published runs that ran.
RAN = ["evaluate", "-m", "llama3.1-405b", "-H", "h100-sxm", "-n", "8192", "--tp", "8",
       "--pp", "16", "--cp", "1", "--ep", "1", "--vp", "1", "--micro-batch", "1",
       "--global-batch", "2048", "--seq-len", "8192"]


def test_a_layout_within_the_memory_models_error_is_timed_with_a_warning(capsys):
    from planner.engine.inputs.defaults import MEMORY_TOLERANCE

    code, out, err = _run(capsys, [*RAN, "-f", "json"])
    assert code == 0 and '"fits": false' in out and '"step_time_s"' in out
    warning = next(line for line in err.splitlines() if "may not fit" in line)
    assert warning.startswith("capplan: warning: the layout may not fit")
    assert "needs 81.8 GB per GPU" in warning and "h100-sxm has 80.0 GB" in warning
    assert "2 % over" in warning and f"{100 * MEMORY_TOLERANCE:.0f} % error" in warning
    assert "Traceback" not in err


def test_beyond_the_memory_models_error_it_is_still_refused(capsys):
    """126.2 GB of 80 (1.6x) with every selective module is past the tolerance: exit 2."""
    from planner.engine.inputs.defaults import MEMORY_TOLERANCE

    assert 126.2 / 80.0 > 1 + MEMORY_TOLERANCE > 81.8 / 80.0
    code, _, err = _run(capsys, TOO_BIG)
    assert code == 2 and "may not fit" not in err


def test_a_search_takes_a_layout_within_the_error_only_when_none_fits(capsys):
    """VP and micro-batch left out: no 405B layout at TP8 PP16 CP1 fits without
    recompute, so the fastest within the tolerance is timed and the notice says none fits;
    with full recompute one fits and is taken."""
    argv = RAN[:RAN.index("--vp")] + RAN[RAN.index("--micro-batch") + 2:]
    code, out, err = _run(capsys, [*argv, "-f", "json"])
    assert code == 0 and '"fits": false' in out
    assert "comes closest to fitting: none fits" in err and "may not fit" in err
    code, out, err = _run(capsys, [*argv, "--recompute", "full", "-f", "json"])
    assert code == 0 and '"fits": true' in out
    assert "the fastest for 8192 GPUs that fits" in err and "may not fit" not in err


def test_a_phase_within_the_memory_models_error_is_timed_with_its_warning(capsys, tmp_path):
    """A [[phases]] run: the phase over its HBM by less than the tolerance is timed and its
    warning names the phase; the run exits 0."""
    scenario = tmp_path / "s.toml"
    scenario.write_text('model = "llama3.1-405b"\n\n[[phases]]\nname = "pretrain"\n'
                        'tokens = 1e12\ngpus = 8192\nglobal_batch = 2048\nseq_len = 8192\n'
                        'tp = 8\npp = 16\ncp = 1\nep = 1\nvp = 1\nmicro_batch = 1\n')
    code, out, err = _run(capsys, ["evaluate", "--scenario", str(scenario), "-H", "h100-sxm",
                                   "-f", "json"])
    assert code == 0, err
    warning = next(line for line in err.splitlines() if "may not fit" in line)
    assert "pretrain" in warning and "needs 81.8 GB per GPU" in warning
    assert '"phases"' in out


def test_a_recompute_left_out_that_fits_neither_way_is_refused_at_full(capsys):
    # GPT-3 175B on 72 TPU v6e (32 GB): no layout fits with selective nor with full; the
    # refusal shows the full-recompute layout, the closest, and does not suggest the
    # recompute already tried
    code, out, err = _run(capsys, ["evaluate", "-m", "gpt3-175b", "-H", "tpu-v6e", "-n", "72",
                                   "--global-batch", "144", "--seq-len", "8192"])
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "recompute full" in err and "--recompute full" not in err
