#include "transport/shm.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

namespace preccl {

ShmSegment::~ShmSegment() {
  if (base_) munmap(base_, bytes_);
  unlinkName();
}

void ShmSegment::unlinkName() {
  if (linked_) shm_unlink(name_.c_str());
  linked_ = false;
}

static bool mapFd(int fd, size_t bytes, void** base, std::string* err) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    *err = std::string("mmap: ") + strerror(errno);
    return false;
  }
  *base = p;
  return true;
}

bool ShmSegment::create(const std::string& name, size_t bytes, std::string* err) {
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) {
    *err = "shm_open(" + name + "): " + strerror(errno);
    return false;
  }
  name_ = name;
  linked_ = true;
  // ftruncate leaves the segment sparse: only slots that are used take memory.
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    *err = "ftruncate(" + name + "): " + strerror(errno);
    close(fd);
    return false;
  }
  bytes_ = bytes;
  return mapFd(fd, bytes, &base_, err);
}

bool ShmSegment::open(const std::string& name, size_t bytes, std::string* err) {
  int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) {
    *err = "shm_open(" + name + "): " + strerror(errno);
    return false;
  }
  bytes_ = bytes;
  return mapFd(fd, bytes, &base_, err);
}

}  // namespace preccl
