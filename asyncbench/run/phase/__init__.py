"""One phase's operations: split among its workers, timed batch by batch on the event loop (and how long the engine held it), and folded into the phase's result row."""
