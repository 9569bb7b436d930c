"""The search: tasks of layout slices reduced to the best rows per GPU count and
objective (:mod:`.optimize`, :mod:`.native_search`, :mod:`.distributed`), their explanations
(:mod:`.explain`, :mod:`.alternatives`), and the searches built on it: accelerator co-design,
phases, several sites and RL pools.

The top room of the engine; the analysis and report layers use it."""
