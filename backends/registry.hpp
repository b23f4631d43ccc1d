// The backends built into this binary, and backends by name.
#pragma once

#include "qconform/backend.hpp"

#include <memory>
#include <string>
#include <vector>

namespace qc {

// What make_backend passes on to the backends it makes.
struct BackendOptions {
  // An exec runner's limit for each reply (the run's --timeout); 0: none. hello gets at least 60 s.
  double timeout_seconds = 0;
};

// Every backend built into this binary, in a stable order: the default set a run uses.
std::vector<std::unique_ptr<Backend>> make_builtin_backends();
// A backend by name: a built-in one, or a variant outside the default set, "cpu-ref:<preset>" (cpu-ref
// claiming another preset it implements, e.g. cpu-ref:tflite-reference). Throws InputError naming
// what is known.
//
// Two prefixes name programs rather than built-in backends (docs/integrate.md): "exec:CMD ARGS" starts
// CMD ARGS (with /bin/sh -c) as an exec runner, "py:MODULE:CLASS" runs the Python backend class
// MODULE.CLASS as one (python -m qconform.exec MODULE:CLASS, with the qconform package on
// PYTHONPATH). Either throws InputError when the runner cannot be started or speaks another
// protocol version.
std::unique_ptr<Backend> make_backend(const std::string& name, const BackendOptions& options = {});
// The names make_backend accepts beyond the default set, for help texts.
std::vector<std::string> backend_variants();

}  // namespace qc
