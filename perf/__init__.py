"""Not code: makes perf/ a regular package so that `python3 -m perf.testbed` finds this tree's test bed
before any other `perf` on the module search path (docs/testbed.md)."""
