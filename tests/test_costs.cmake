# Seconds the slowest tests take (one run of .ci/run on a 2-core host): a guide for the order
# ctest -j starts them in, not a limit. ctest starts tests in descending COST, and a build folder
# that has run the tests before orders them by what it measured (Testing/Temporary/
# CTestCostData.txt); a fresh folder, as in CI's clean clone, has no measurements and would start
# these in the order they are declared, the longest near the end, with one core idle while it runs
# alone. Read by qconform_test_costs() (tests/CMakeLists.txt) for tests added with add_test, and by
# tests/test_costs.ctest.cmake for the tests gtest_discover_tests finds when ctest starts. A name no
# longer present is ignored; refresh from a run's Testing/Temporary/CTestCostData.txt.
set(QCONFORM_TEST_COSTS
    reports.html 37
    peers.docs_commands 25
    model.digits_cnn_qdq 20
    oracle.sweep_f32 19
    peer.onnxruntime-cpu.x86-avx2-emulated 15
    Float8Property.QuantizeFastPathEqualsDefinition 15
    CliCustomPresets.TheDocsCommandsRunAndTheClaimPassesTheTfliteVariant 14
    models.docs_commands 13
    CliExec.HangIsTimeoutAndIsolateDoesNotFork 10
    model.digits_cnn_qop 10
    oracle.quantize_property.generic_isa 9
    QuantizeProperty.FastPathEqualsSlowPath 9
    peer.onednn.x86-avx512-core 8
    peer.torch-onednn 8
    peer.onednn.x86-avx2 7
    Plugin.CpuRefThroughTheAbiGivesCpuRefsResultsOnEveryDefaultCase 7
    DequantizeProperty.FastPathEqualsSlowPath 6
    MxProperty.QuantizeFastPathEqualsDefinition 6
    benchmarks.model_bench 6
    peer.onednn 5
    peer.torch-qnnpack 5
    Float8Property.DequantizeFastPathEqualsDefinition 5
    HipPlan.CaseFilesOnTheCpuExecutor 4
    MxProperty.DequantizeFastPathEqualsDefinition 4
    CliShards.ShardsFromEitherRunnersEnvironmentMergeToTheUnshardedRun 3
    QuantizeFastPath.DecidesEveryInputClass 3
    CoreNarrowing.MatchesTheExactEncodeAtEveryMidpointAndRandomly 3
    ExecServe.CppRunnerMatchesInProcessOnEveryDefaultSuite 3
    oracle.qgemm_output_property.generic_isa 3
    HipSuiteExpectations.TheClaimMeetsEveryExpectationAgainstTheSpec 3
    FormatEncode.F32EncodeMatchesTheHardwareCastOnRandomDoubles 3
    KilledRun.AnExecRunnerDiesWithTheHarness 3
    KilledRun.AnIsolatedPluginCallDiesWithTheHarness 3
    RequantizeProperty.FastPathEqualsSlowPath 3
    HipSuiteExpectations.TheClaimMeetsEveryExpectationAgainstTheSpec 21
    HipPlan.CaseFilesOnTheCpuExecutor 16
    HipPlan.Int32AccumulatorWraps 2
)
