// Errors are values with context: what went wrong and where (file, case, field, element).
#pragma once

#include <stdexcept>
#include <string>

namespace qc {

// Thrown for bad input (case files, parameters, policies). The message names what and where;
// the CLI maps it to exit code 2.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace qc
