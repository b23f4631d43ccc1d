# Seconds the slowest tests take (one run of .ci/run on a 2-core host): a guide for the order
# ctest -j starts them in, not a limit. ctest starts tests in descending COST, and a build folder
# that has run the tests before orders them by what it measured (Testing/Temporary/
# CTestCostData.txt); a fresh folder, as in CI's clean clone, has no measurements and would start
# these in the order they are declared, the longest near the end, with one core idle while it runs
# alone. Read by qconform_test_costs() (tests/CMakeLists.txt) for tests added with add_test, and by
# tests/test_costs.ctest.cmake for the tests gtest_discover_tests finds when ctest starts. A name no
# longer present is ignored; refresh from a run's Testing/Temporary/CTestCostData.txt.
set(QCONFORM_TEST_COSTS
    CliCustomPresets.TheDocsCommandsRunAndTheClaimPassesTheTfliteVariant 34
    peer.onnxruntime-cpu.x86-avx2-emulated 29
    HipSuiteExpectations.TheClaimMeetsEveryExpectationAgainstTheSpec 21
    peers.docs_commands 20
    HipPlan.CaseFilesOnTheCpuExecutor 16
    peer.onednn.x86-avx2 16
    ExecServe.CppRunnerMatchesInProcessOnEveryDefaultSuite 15
    peer.onednn.x86-avx512-core 15
    Plugin.CpuRefThroughTheAbiGivesCpuRefsResultsOnEveryDefaultCase 11
    peer.torch-onednn 9
    conformance.peers_ort.avx2-maddubs 9
    CliExec.HangIsTimeoutAndIsolateDoesNotFork 9
    peer.onednn 8
    peer.onnxruntime-cpu 7
    reports.html 7
    Float8Property.DequantizeFastPathEqualsDefinition 7
    conformance.peers_qgemm.avx2-maddubs 7
    peer.torch-qnnpack 6
    oracle.sweep_f32 6
    QuantizeProperty.FastPathEqualsSlowPath 5
    Float8Property.QuantizeFastPathEqualsDefinition 5
    MxProperty.QuantizeFastPathEqualsDefinition 5
    peer.xnnpack 5
    oracle.quantize_property.generic_isa 5
    peer.gemmlowp 4
    DequantizeProperty.FastPathEqualsSlowPath 4
    MxProperty.DequantizeFastPathEqualsDefinition 4
    FormatEncode.F32EncodeMatchesTheHardwareCastOnRandomDoubles 3
    conformance.peers_qconv2d.avx2-maddubs 3
    KilledRun.AnExecRunnerDiesWithTheHarness 3
    KilledRun.AnIsolatedPluginCallDiesWithTheHarness 3
    conformance.float8.cpu-ref 3
    RequantizeProperty.FastPathEqualsSlowPath 3
    CoreNarrowing.MatchesTheExactEncodeAtEveryMidpointAndRandomly 3
    QuantizeFastPath.DecidesEveryInputClass 2
    HipPlan.Int32AccumulatorWraps 2)
