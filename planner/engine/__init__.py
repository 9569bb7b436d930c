"""The engine: layout space, run model, generated kernel, evaluator, optimizer and the
inputs they take (catalog, scenario, prices, domains)."""
