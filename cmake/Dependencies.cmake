# Dependencies come from Debian's packages (see README): fmt and Catch2 are required, hwloc,
# OpenMPI, Gloo and the CUDA toolkit are optional and only enable extra pieces.
set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)
find_package(fmt REQUIRED)
find_package(PkgConfig)

set(PRECCL_HAVE_HWLOC OFF)
if(PkgConfig_FOUND)
  pkg_check_modules(HWLOC IMPORTED_TARGET hwloc)
  if(HWLOC_FOUND)
    set(PRECCL_HAVE_HWLOC ON)
  endif()
endif()

# NVIDIA's nccl.h, only to prove our enum values equal NCCL's (tests/test_nccl_values.cc).
find_path(PRECCL_NCCL_INCLUDE_DIR nccl.h
  PATHS /usr/local/cuda/include /usr/include ENV CUDA_HOME PATH_SUFFIXES include NO_CACHE)
if(PRECCL_NCCL_INCLUDE_DIR)
  message(STATUS "PReCCL: NVIDIA nccl.h found in ${PRECCL_NCCL_INCLUDE_DIR}")
else()
  message(STATUS "PReCCL: NVIDIA nccl.h not found; the enum-value test will skip")
endif()
