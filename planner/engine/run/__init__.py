"""The run model and its backends: ``run_model``'s named stages of formulas
(:mod:`.model`), what each output column holds (:mod:`.column`, :mod:`.columns`), the
generated numpy kernel (:mod:`.kernel`, ``_kernel_generated``), the compiled extension
(:mod:`.native`), and the kernel run over arrays of candidates (:mod:`.kernel_run`), with
the run's scalar inputs (:mod:`.run_inputs`) and hot spares resolved before it.

Never a Python object per candidate and no sympy here (:mod:`.symbolic` imports it only for
the code generator)."""
