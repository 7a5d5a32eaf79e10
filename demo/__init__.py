"""The demo of `make demo`: its data, one round of each task type and a simulated crowd."""
