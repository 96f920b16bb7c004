"""Hypothesis settings the long state machines share (the server's, the reflector's and
the informer's)."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

#: 300 runs of up to 50 steps, no deadline, slow data generation allowed.
LONG_MACHINE = settings(
    max_examples=300,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
