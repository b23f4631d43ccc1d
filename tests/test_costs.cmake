# Seconds the slowest tests take (one run of .ci/run on a 2-core host): a guide for the order
# ctest -j starts them in, not a limit. ctest starts tests in descending COST, and a build folder
# that has run the tests before orders them by what it measured (Testing/Temporary/
# CTestCostData.txt); a fresh folder, as in CI's clean clone, has no measurements and would start
# these in the order they are declared, the longest near the end, with one core idle while it runs
# alone. Read by qconform_test_costs() (tests/CMakeLists.txt) for tests added with add_test, and by
# tests/test_costs.ctest.cmake for the tests gtest_discover_tests finds when ctest starts. A name no
# longer present is ignored; refresh from a run's Testing/Temporary/CTestCostData.txt.
set(QCONFORM_TEST_COSTS
    peers.docs_commands 37
    peer.onnxruntime-cpu.x86-avx2-emulated 23
    HipSuiteExpectations.TheClaimMeetsEveryExpectationAgainstTheSpec 21
    CliCustomPresets.TheDocsCommandsRunAndTheClaimPassesTheTfliteVariant 25
    HipPlan.CaseFilesOnTheCpuExecutor 15
    peer.onednn.x86-avx512-core 12
    peer.onednn.x86-avx2 12
    ExecServe.CppRunnerMatchesInProcessOnEveryDefaultSuite 10
    CliExec.HangIsTimeoutAndIsolateDoesNotFork 8
    peer.torch-onednn 7
    oracle.sweep_f32 7
    reports.html 6
    peer.torch-qnnpack 6
    peer.onnxruntime-cpu 6
    peer.onednn 6
    oracle.quantize_property.generic_isa 6
    conformance.peers_ort.avx2-maddubs 6
    Plugin.CpuRefThroughTheAbiGivesCpuRefsResultsOnEveryDefaultCase 6
    QuantizeProperty.FastPathEqualsSlowPath 5
    peer.xnnpack 4
    peer.gemmlowp 4
    conformance.peers_qgemm.avx2-maddubs 4
    DequantizeProperty.FastPathEqualsSlowPath 4
    conformance.peers_qconv2d.avx2-maddubs 3
    conformance.float8.cpu-ref 3
    KilledRun.AnIsolatedPluginCallDiesWithTheHarness 3
    KilledRun.AnExecRunnerDiesWithTheHarness 3
    FormatEncode.F32EncodeMatchesTheHardwareCastOnRandomDoubles 3
    oracle.int_gemm.generic_isa 2
    oracle.int_gemm.avx2_isa 2
    QuantizeFastPath.DecidesEveryInputClass 2
    CoreNarrowing.MatchesTheExactEncodeAtEveryMidpointAndRandomly 2)
