"""Planning and running: run specs, sweep plans, the runner that drives a mechanism's
lifecycle, and what a run measures about itself (time, memory, provenance)."""
