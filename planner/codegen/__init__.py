"""Everything the project generates, behind one command: ``python -m planner.codegen``.

In dependency order (:data:`planner.codegen.fingerprint.STEPS`): the layout's typed
dataclasses (``planner/engine/layouts/_layout_generated.py``), the run-model kernel
(``planner/engine/run/_kernel_generated.py``), the workbook's formulas, the compiled
backend's C source, then docs/formulas.md, docs/columns.md, docs/cli.md,
docs/validation.md and docs/whole-runs.md (+ their figures).  A step runs only when its
fingerprint (the SHA-256 of its sources, pinned library versions and outputs, recorded in
``planner/codegen/fingerprints.json``) has changed; ``--all`` runs every step.
``--check`` writes nothing, compares fingerprints in about a second and exits 1 naming
every stale file and the command that regenerates it (CI runs it).
"""
