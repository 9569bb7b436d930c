"""docs/cli.md is generated from --help and must match the commands."""

from pathlib import Path

from planner.codegen.cli_docs import DOC, WIDTH, main, render_cli_markdown


def test_docs_cli_md_is_up_to_date():
    assert DOC.exists(), "docs/cli.md is missing; run: python -m planner.codegen"
    assert DOC.read_text() == render_cli_markdown(), (
        "docs/cli.md is stale; run: python -m planner.codegen")


def test_every_command_has_a_section():
    import typer.main

    import planner.cli.main  # noqa: F401
    from planner.cli.app import app

    text = render_cli_markdown()
    root = typer.main.get_command(app)
    ctx = root.make_context("capplan", [], resilient_parsing=True)
    for name in root.list_commands(ctx):
        assert f"\n## capplan {name}\n" in text
        assert f"Usage: capplan {name} [OPTIONS]" in text
    assert "## capplan catalog list" in text and "## capplan plot" in text


def test_render_does_not_depend_on_the_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    narrow = render_cli_markdown()
    monkeypatch.setenv("COLUMNS", "250")
    assert render_cli_markdown() == narrow
    longest = max(len(line) for line in narrow.splitlines() if not line.startswith("- ["))
    assert longest <= WIDTH


def test_main_writes_and_checks(tmp_path: Path, capsys):
    target = tmp_path / "cli.md"
    assert main([str(target), "--check"]) == 1
    assert "stale" in capsys.readouterr().err
    assert main([str(target)]) == 0
    assert target.read_text() == render_cli_markdown()
    assert main([str(target), "--check"]) == 0
