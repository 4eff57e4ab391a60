// The Python module: ProcessGroupPreccl as a subclass of torch's ProcessGroup, so that torch.distributed
// takes it from the creator that preccl_torch registers.
#include <pybind11/chrono.h>
#include <torch/python.h>

#include "process_group_preccl.h"

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "PReCCL's c10d backend (docs/torch.md)";
  pybind11::module::import("torch.distributed");  // the base classes' Python types
  pybind11::class_<preccl_torch::ProcessGroupPreccl, c10d::ProcessGroup,
                   c10::intrusive_ptr<preccl_torch::ProcessGroupPreccl>>(m, "ProcessGroupPreccl")
      .def(pybind11::init<const c10::intrusive_ptr<c10d::Store>&, int, int, std::chrono::milliseconds>(),
           pybind11::arg("store"), pybind11::arg("rank"), pybind11::arg("size"), pybind11::arg("timeout"),
           pybind11::call_guard<pybind11::gil_scoped_release>());
}
