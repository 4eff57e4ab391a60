"""PReCCL's multi-host, multi-NIC test bed (docs/testbed.md): run it as `python3 -m perf.testbed` from the
repository root. Its modules import each other relatively; blaster.py is a standalone program (by path)."""
