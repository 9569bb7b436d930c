"""What a GPU-hour costs: cloud price tiers and providers, spot preemption rates
(:mod:`.pricing`), and an owned cluster's total cost of ownership (:mod:`.ownership`).

The lowest room of the engine: it reads the catalog's prices and imports no other room;
the cost formulas themselves are :mod:`formulas.cost`."""
