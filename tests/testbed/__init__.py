"""The test bed's self-test (ctest `testbed`); run it as `python3 -m tests.testbed` from the repository root."""
