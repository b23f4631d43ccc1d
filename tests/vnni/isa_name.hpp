// The name of an ISA-parameterized test instance (INSTANTIATE_TEST_SUITE_P's last argument), for the
// GEMM and conv tests, which share a unity file (docs/development.md "Build time").
#pragma once

#include "backends/vnni/vnni.hpp"

#include <gtest/gtest.h>

#include <string>

namespace qc::vnni::test {

inline std::string isa_name(const ::testing::TestParamInfo<Isa>& info) { return std::string(name(info.param)); }

}  // namespace qc::vnni::test
