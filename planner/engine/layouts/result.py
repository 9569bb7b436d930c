"""The light result of :func:`planner.evaluate` (``as_frame=False``): a dict of columns.

One layout gives plain Python scalars (``result["step_time_s"]`` is a float), several
layouts give numpy arrays of equal length; :meth:`Evaluation.to_frame` makes the same
pandas DataFrame ``evaluate`` returns by default (pandas is imported only then).
"""

from __future__ import annotations

import numpy as np


class Evaluation(dict):
    """Column name -> value (one layout) or numpy array (one entry per layout)."""

    __slots__ = ()

    @property
    def layouts(self) -> int:
        """How many layouts were evaluated."""
        return max((int(np.size(v)) for v in self.values() if np.ndim(v) > 0), default=1)

    def to_frame(self):
        """The pandas DataFrame of these columns, one row per layout."""
        import pandas as pd

        n = self.layouts
        return pd.DataFrame({k: np.broadcast_to(np.asarray(v), (n,)) for k, v in self.items()})
