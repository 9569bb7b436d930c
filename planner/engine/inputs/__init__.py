"""The question a run asks, turned into SI inputs: the choices and their defaults
(:mod:`.defaults`), the layout's dimensions and validity rules declared once
(:mod:`.layout_rules`), every run-model input's name, unit and domain (:mod:`.glossary`,
:mod:`.domains`, :mod:`.call_checks`), the training method and phases, and the scenario
(:mod:`.scenario`): catalog entries and execution terms (``execution.toml``) as numbers.

Imports only :mod:`planner.engine.economics` of the engine; constants-only modules here
(``defaults``, ``layout_rules``) are what the CLI may import at start."""
