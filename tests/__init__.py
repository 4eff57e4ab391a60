"""Not code: makes tests/ a regular package so that `python3 -m tests.testbed` finds this tree's tests before
any other `tests` on the module search path. The C++ tests are built by CMakeLists.txt."""
