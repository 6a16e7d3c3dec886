"""Training: the papers' transformers trained on the solver's own targets (the stage every other one uses).

In pipeline order: ``data`` (seeded inputs, labels from ``Target.evaluate``), ``network`` (the papers'
transformer, a batch of models sharing one forward pass), ``step`` (one optimizer step: reference, fast,
CUDA graph), ``trainer`` (the recipe: warm-up, cosine, early stopping, validation NMSE, learning curves),
``devices`` (the device, torch's threads, the worker processes).
"""
