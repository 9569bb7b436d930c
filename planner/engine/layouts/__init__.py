"""Layouts as arrays of candidates: the search's space of layouts in blocks
(:mod:`.space`), a user's one layout checked and completed (:mod:`.layout_check`), and the
library's ``evaluate()`` over either (:mod:`.evaluator`), with what is built directly on it:
the GRPO step (:mod:`.rl`) and spot break-even (:mod:`.spot`)."""
