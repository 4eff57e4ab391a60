"""The self-test of the test bed (perf.testbed, docs/testbed.md). From the repository root:

  python3 -m tests.testbed selftest --perf BIN                    the CI test (ctest testbed)
  python3 -m tests.testbed selftest-parse | selftest-capacity     its checks that need no root
"""
import sys

from perf.testbed import cli

from . import selftest
from . import selftest_capacity
from . import selftest_parse

COMMANDS = (selftest, selftest_parse, selftest_capacity)


def main(argv=None):
    return cli.run("python3 -m tests.testbed", __doc__, COMMANDS, argv)


if __name__ == "__main__":
    sys.exit(main())
