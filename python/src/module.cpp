// The pybind11 module qconform._qconform; the package qconform re-exports it (python/qconform).
#include "common.hpp"
#include "qconform/error.hpp"

#ifndef QCONFORM_VERSION
#define QCONFORM_VERSION "0.0.0"
#endif

PYBIND11_MODULE(_qconform, m) {
  namespace py = pybind11;
  m.doc() = "qconform: exact-arithmetic conformance harness for quantized ML kernels";
  m.attr("__version__") = QCONFORM_VERSION;
  // The CLI's input errors (exit status 2), with the same messages: a ValueError.
  py::register_exception<qc::InputError>(m, "InputError", PyExc_ValueError);
  qcpy::bind_formats(m);
  qcpy::bind_policies(m);
  qcpy::bind_oracle(m);
  qcpy::bind_cases(m);
  qcpy::bind_results(m);
  qcpy::bind_backends(m);
}
