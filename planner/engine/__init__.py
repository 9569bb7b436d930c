"""The engine: a training run's question turned into numbers, evaluated over layouts, searched.

Five rooms, each importing only those listed before it (``tests/test_architecture.py``):

* :mod:`planner.engine.economics` - what a GPU-hour costs: price tiers and providers, owned
  clusters' total cost of ownership;
* :mod:`planner.engine.inputs` - the question: the choices and their defaults, the layout's
  declared dimensions and rules, the domains of every number, the scenario resolved from the
  catalog into SI inputs;
* :mod:`planner.engine.run` - the run model (named stages of ``formulas``), its output
  columns and its backends: the generated numpy kernel, the split kernel and the compiled
  extension;
* :mod:`planner.engine.layouts` - layouts as arrays: the space of layouts, one user's layout
  checked, ``evaluate()`` over either (and the RL step and spot break-even built on it);
* :mod:`planner.engine.search` - the search for the best runs per objective, its
  reductions, schedulers and explanations, and the searches built on it (co-design, phases,
  sites, RL pools).
"""
