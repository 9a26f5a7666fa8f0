"""The context window: what the model sees each step, and the summary evicted messages go to."""
