// The backends built into this binary, and backends by name.
#pragma once

#include "qconform/backend.hpp"

#include <memory>
#include <string>
#include <vector>

namespace qc {

// Every backend built into this binary, in a stable order: the default set a run uses.
std::vector<std::unique_ptr<Backend>> make_builtin_backends();
// A backend by name: a built-in one, or a variant outside the default set, "cpu-ref:<preset>" (cpu-ref
// claiming another preset it implements, e.g. cpu-ref:tflite-reference). Throws InputError naming
// what is known.
std::unique_ptr<Backend> make_backend(const std::string& name);
// The names make_backend accepts beyond the default set, for help texts.
std::vector<std::string> backend_variants();

}  // namespace qc
