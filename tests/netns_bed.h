// A small multi-host bed for tests: `hosts` network namespaces x `rails` NICs. NIC r of host h is a veth
// ("rail<r>" inside the namespace, 198.18.<r>.<h+1>/24) whose root-side end joins one bridge per rail.
// Needs root and `ip netns`; netnsUnavailable() says why not. Everything created is named after the test
// process's pid and deleted by the destructor (and a killed run's leftovers by the next one).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ptest {

// Runs a shell command; returns its exit status and appends its output to `out`.
int sh(const std::string& cmd, std::string* out = nullptr);

// Why the namespace tests cannot run here ("" when they can).
std::string netnsUnavailable();

// In a forked rank: moves the process into namespace `name` (exits 4 on failure).
void enterNs(const std::string& name);

class NetnsBed {
 public:
  NetnsBed(int hosts, int rails);
  ~NetnsBed() { teardown(); }
  NetnsBed(const NetnsBed&) = delete;
  NetnsBed& operator=(const NetnsBed&) = delete;

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  int hosts() const { return hosts_; }
  int rails() const { return rails_; }
  std::string ns(int h) const;
  std::string bridge(int r) const;
  std::string veth(int h, int r) const;

  // Shapes NIC r of host h to `rate` (tc tbf) in both directions; the qdiscs go with the links.
  bool shape(int h, int r, const std::string& rate, std::string* log);
  // Takes NIC r of host h down or up, as a failed NIC or cable: the namespace's end, so the host loses
  // the NIC's routes and every packet through it is dropped.
  bool setLink(int h, int r, bool up, std::string* log = nullptr);
  // Bytes through rail r, summed over hosts, read on the root-side veth ends.
  uint64_t railBytes(int r) const;
  // Deletes in reverse order of creation; true when nothing of ours is left.
  bool teardown();

 private:
  bool build(std::string* log);
  static void removeStale();

  int hosts_, rails_;
  std::string tag_;
  std::vector<std::string> created_;
  bool ok_ = false;
  std::string error_;
};

// In a TEST_CASE: the bed, or null when namespaces are unavailable here (the case is then reported as
// skipped, with the reason). A bed that cannot be built fails the case.
std::unique_ptr<NetnsBed> testBed(int hosts, int rails);

}  // namespace ptest
