"""Everything the project generates, behind one command: ``python -m planner.codegen``.

In dependency order: the run-model kernel (``planner/engine/_kernel_generated.py``),
then docs/formulas.md, docs/columns.md, docs/cli.md and docs/validation.md (+ its figure).
``--check`` writes nothing and exits 1 naming every stale file (CI runs it).
"""
