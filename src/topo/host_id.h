// Which ranks count as one node, i.e. can reach each other through shared memory.
#pragma once
#include <cstdint>
#include <string>

namespace preccl {

// A string that is equal for two ranks exactly when they can share memory: PRECCL_HOSTID (or NCCL_HOSTID)
// when set; else hostname + boot id (/proc/sys/kernel/random/boot_id) + the network-namespace inode
// (stat("/proc/self/ns/net").st_ino) so that ranks in different network namespaces of one machine count as
// different hosts (the namespace test bed relies on this) + the IPC namespace inode (shared memory across IPC
// namespaces would not work). Not cached: it is cheap, and a forked child may have moved to a new namespace.
// The mount namespace is left out on purpose: `ip netns exec` gives every command its own one (to remount
// /sys) while /dev/shm stays shared, so including it would split ranks of one test-bed node.
std::string hostIdentity();
uint64_t hostHash(const std::string& id);   // 64-bit FNV-1a of it

}  // namespace preccl
