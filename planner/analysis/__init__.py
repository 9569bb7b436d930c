"""Analyses around the engine: Monte Carlo simulation, sensitivity, uncertainty,
stragglers and validation against published runs."""
