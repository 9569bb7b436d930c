"""capplan's planner: scenarios, design space, vectorised evaluation, optimisation, reports."""
