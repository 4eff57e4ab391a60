// The Catch2 runner of preccl-tests. Tests that need several ranks fork them (tests/harness.h).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace {

// Repeats every failed assertion, one line each with its test case, after the run: a long log (the
// namespace group prints the ranks' warnings) is often cut in the middle where it is shown, and its end
// then still says what failed.
struct FailureRecap : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;

  bool assertionEnded(const Catch::AssertionStats& s) override {
    const Catch::AssertionResult& r = s.assertionResult;
    if (r.isOk()) return true;
    std::string what = r.hasExpression() ? r.getExpressionInMacro() + " with " + r.getExpandedExpression() : std::string();
    if (r.hasMessage()) what += (what.empty() ? "" : ": ") + r.getMessage();
    if (what.size() > 400) what = what.substr(0, 400) + "...";
    lines_.push_back(currentTestCaseInfo->name + " | " + r.getSourceInfo().file + ":" +
                     std::to_string(r.getSourceInfo().line) + " | " + what);
    return true;
  }

  void testRunEnded(const Catch::TestRunStats& s) override {
    if (!lines_.empty()) {
      Catch::cout() << "\nFailed assertions, again (" << lines_.size() << "):\n";
      for (size_t i = 0; i < lines_.size() && i < 40; i++) Catch::cout() << "  " << lines_[i] << "\n";
      Catch::cout() << std::flush;
    }
    TestEventListenerBase::testRunEnded(s);
  }

 private:
  std::vector<std::string> lines_;
};

}  // namespace

CATCH_REGISTER_LISTENER(FailureRecap)
