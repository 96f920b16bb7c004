"""refimpl: client-go's controller machinery as readable, typed, executable Python.

Each component is a non-blocking *core* (a state machine that refines a TLA+ module in
spec/) wrapped by a thin threaded *shell* with client-go's API in snake_case. Start with
``refimpl.workqueue`` and ``refimpl tour``.
"""

__version__ = "0.1.0"

import logging as _logging

# A library logs; the application decides where it goes.
_logging.getLogger("refimpl").addHandler(_logging.NullHandler())
