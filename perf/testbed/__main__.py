"""PReCCL multi-host, multi-NIC test bed: H hosts x K NICs as network namespaces (see docs/testbed.md).

  python3 -m perf.testbed up | down | run | report | check-scenario ...   the bed (bed_commands)
  python3 -m perf.testbed nic-use OUT_DIR ...                           every call's NIC use per NIC
  python3 -m perf.testbed bytes-where OUT_DIR ...                       what each NIC sent, what was relayed
  python3 -m perf.testbed stability OUT_DIR ...                         PReCCL's shares and reactions
  python3 -m perf.testbed results-table LABEL=OUT_DIR ...               several runs, one markdown table
  python3 -m perf.testbed tcp-flows sample | table ...                  per-TCP-flow rates from `ss`

Run it from the repository root. Its self-test (ctest testbed) is tests/testbed: python3 -m tests.testbed.
blaster.py is not a command but a program of its own, which the bed starts inside its namespaces.
"""
import sys

from . import bed_commands
from . import cli
from . import bytes_where
from . import nic_use
from . import results_table
from . import stability
from . import tcp_flows

PROG = "python3 -m perf.testbed"
COMMANDS = (bed_commands, bytes_where, nic_use, stability, results_table, tcp_flows)


def main(argv=None):
    return cli.run(PROG, __doc__, COMMANDS, argv)


if __name__ == "__main__":
    sys.exit(main())
