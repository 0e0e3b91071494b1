//! Build graph of the Zig side.
//!
//!   zig build test         unit + stress tests of the runtime and the bench harness, and the
//!                          examples' tests
//!   zig build examples     builds examples/*.zig (std.Io programs on Ampere) into zig-out/bin
//!   zig build fiber-bench  fiber switch, spawn + await and idle-memory measurements
//!   zig build test-tsan    the same tests under ThreadSanitizer (LLVM backend), smoke intensity
//!   zig build bench        builds and runs the ampere benchmark (ReleaseFast); args after `--`
//!   zig build io-bench-build   the io suite's program and the http suite's server per std.Io
//!                          implementation (ReleaseFast): io_bench_threaded and
//!                          http_server_threaded always, io_bench_zio and http_server_zio with
//!                          -Dzio=true (the lazy zio package), io_bench_ampere and
//!                          http_server_ampere with -Dio-ampere=true (Runtime.io())
//!   zig build test-io      the io program's and the http server's tests on std.Io.Threaded
//!                          (and on zio with -Dzio=true, ampere.io with -Dio-ampere=true)
//!   zig build compare      builds both programs and runs the benchmarks (analysis orchestrator,
//!                          `python -m analysis bench --build --compare`), prints the table
//!
//! The benchmark binary and the `ampere` module it imports are always ReleaseFast, whatever
//! `-Doptimize` says: a library built in Debug under a benchmark called "release" was one of
//! the defects of the earlier suites.

const std = @import("std");
const builtin = @import("builtin");

/// The zio package of build.zig.zon (keep in step with its url and hash), for meta.json.
const zio_version = "0.17.0";
const zio_commit = "25fc2daa2834862e970e57776a5b9d6329b3d593";

/// One `std.Io` implementation of the io program (runtime/bench/io_impl.zig).
const IoImpl = struct {
    name: []const u8,
    exe: []const u8,
    /// The http suite's server on the same implementation (runtime/bench/http_server.zig);
    /// null: none (zio.epoll).
    http_exe: ?[]const u8,
    version: []const u8,
    zio_commit: ?[]const u8 = null,
};

pub fn build(b: *std.Build) void {
    const target = b.standardTargetOptions(.{});
    const optimize = b.standardOptimizeOption(.{});
    const test_filters = b.option([]const []const u8, "test-filter", "Only run tests whose name contains this") orelse &.{};

    const ampere_module = b.addModule("ampere", .{
        .root_source_file = b.path("runtime/src/ampere.zig"),
        .target = target,
        .optimize = optimize,
    });

    // -- tests --------------------------------------------------------------------------
    const bench_ampere = b.createModule(.{
        .root_source_file = b.path("runtime/src/ampere.zig"),
        .target = target,
        .optimize = .ReleaseFast,
    });
    // The lock-misuse program the sync tests run as a child process: ReleaseFast, where a
    // misuse check that were only an assertion would be gone (sync/misuse_tests.zig).
    const misuse_module = b.createModule(.{
        .root_source_file = b.path("runtime/src/sync/misuse_main.zig"),
        .target = target,
        .optimize = .ReleaseFast,
    });
    misuse_module.addImport("ampere", bench_ampere);
    const misuse_exe = b.addExecutable(.{ .name = "ampere_sync_misuse", .root_module = misuse_module });
    const misuse_options = b.addOptions();
    misuse_options.addOptionPath("misuse_exe", misuse_exe.getEmittedBin());
    // The program whose fiber overflows its stack (fiber/fiber_tests.zig), built like the tests.
    const overflow_module = b.createModule(.{
        .root_source_file = b.path("runtime/src/fiber/overflow_main.zig"),
        .target = target,
        .optimize = optimize,
    });
    overflow_module.addImport("ampere", b.createModule(.{
        .root_source_file = b.path("runtime/src/ampere.zig"),
        .target = target,
        .optimize = optimize,
    }));
    const overflow_exe = b.addExecutable(.{ .name = "ampere_fiber_overflow", .root_module = overflow_module });
    misuse_options.addOptionPath("fiber_overflow_exe", overflow_exe.getEmittedBin());

    const test_step = b.step("test", "Run the runtime and bench-harness tests");
    const runtime_tests = addRuntimeTests(b, target, optimize, test_filters, false, misuse_options);
    test_step.dependOn(&b.addRunArtifact(runtime_tests).step);

    const bench_tests = b.addTest(.{
        .root_module = benchModule(b, target, optimize, bench_ampere),
        .filters = test_filters,
    });
    const run_bench_tests = b.addRunArtifact(bench_tests);
    test_step.dependOn(&run_bench_tests.step);
    b.step("test-runtime", "Run only the runtime tests").dependOn(&b.addRunArtifact(runtime_tests).step);
    b.step("test-bench", "Run only the bench-harness tests").dependOn(&run_bench_tests.step);

    // -- examples (examples/): std.Io programs on Ampere; `zig build test` runs their tests ---
    const examples_step = b.step("examples", "Build the examples (examples/*.zig) into zig-out/bin");
    const examples_test_step = b.step("test-examples", "Run only the examples' tests");
    for ([_][]const u8{ "echo_server", "http_server", "fan_out" }) |name| {
        const module = b.createModule(.{
            .root_source_file = b.path(b.fmt("examples/{s}.zig", .{name})),
            .target = target,
            .optimize = optimize,
        });
        module.addImport("ampere", ampere_module);
        const exe = b.addExecutable(.{ .name = name, .root_module = module });
        examples_step.dependOn(&b.addInstallArtifact(exe, .{}).step);
        const example_tests = b.addTest(.{ .name = b.fmt("{s}-tests", .{name}), .root_module = module, .filters = test_filters });
        const run_example_tests = b.addRunArtifact(example_tests);
        examples_test_step.dependOn(&run_example_tests.step);
        test_step.dependOn(&run_example_tests.step);
    }

    const tsan_step = b.step("test-tsan", "Run the runtime tests under ThreadSanitizer (smoke intensity)");
    const tsan_tests = addRuntimeTests(b, target, .Debug, test_filters, true, misuse_options);
    const run_tsan = b.addRunArtifact(tsan_tests);
    run_tsan.setEnvironmentVariable("AMPERE_TEST_INTENSITY", "smoke");
    run_tsan.setEnvironmentVariable("TSAN_OPTIONS", "halt_on_error=1 second_deadlock_stack=1");
    tsan_step.dependOn(&run_tsan.step);

    // -- benchmark -----------------------------------------------------------------------
    const bench_exe = b.addExecutable(.{
        .name = "ampere_bench",
        .root_module = benchModule(b, target, .ReleaseFast, bench_ampere),
    });
    const install_bench = b.addInstallArtifact(bench_exe, .{});
    b.getInstallStep().dependOn(&install_bench.step);
    b.step("bench-build", "Build the ampere benchmark binary").dependOn(&install_bench.step);

    const run_bench = b.addRunArtifact(bench_exe);
    run_bench.step.dependOn(&install_bench.step);
    if (b.args) |args| run_bench.addArgs(args);
    b.step("bench", "Run the ampere benchmark (pass flags after --, e.g. -- --json)").dependOn(&run_bench.step);

    // -- io suite: one std.Io program per implementation ----------------------------------
    const with_zio = b.option(bool, "zio", "Build the io program on the peer zio (lazy package, build.zig.zon)") orelse false;
    const with_ampere_io = b.option(bool, "io-ampere", "Build the io program on ampere's std.Io (Runtime.io())") orelse false;
    const io_build = b.step("io-bench-build", "Build the io suite's program for each std.Io implementation");
    const io_test = b.step("test-io", "Run the io program's tests (std.Io.Threaded; zio with -Dzio=true)");
    const threaded_io = IoImpl{ .name = "zig.threaded", .exe = "io_bench_threaded", .http_exe = "http_server_threaded", .version = builtin.zig_version_string };
    addIoProgram(b, target, optimize, test_filters, bench_ampere, threaded_io, null, io_build, io_test);
    test_step.dependOn(io_test);
    if (with_zio) {
        if (b.lazyDependency("zio", .{ .target = target, .optimize = .ReleaseFast })) |zio| {
            const zio_io = IoImpl{ .name = "zio", .exe = "io_bench_zio", .http_exe = "http_server_zio", .version = zio_version, .zio_commit = zio_commit };
            addIoProgram(b, target, optimize, test_filters, bench_ampere, zio_io, zio.module("zio"), io_build, io_test);
        }
        // zio on epoll (its own `backend` build option): the io program only, no http server
        // and no tests (the same source as `zio`'s), so that the TCP rows can be compared on
        // the kernel interface every other side uses (zio's default `linux` backend is
        // io_uring; runtime/bench/README.md, "Io suite").
        if (b.lazyDependency("zio", .{ .target = target, .optimize = .ReleaseFast, .backend = @as([]const u8, "epoll") })) |zio| {
            const zio_epoll = IoImpl{ .name = "zio.epoll", .exe = "io_bench_zio_epoll", .http_exe = null, .version = zio_version, .zio_commit = zio_commit };
            addIoProgram(b, target, optimize, test_filters, bench_ampere, zio_epoll, zio.module("zio"), io_build, null);
        }
    }
    if (with_ampere_io) {
        const ampere_io = IoImpl{ .name = "ampere.io", .exe = "io_bench_ampere", .http_exe = "http_server_ampere", .version = "0.1.0" };
        addIoProgram(b, target, optimize, test_filters, bench_ampere, ampere_io, null, io_build, io_test);
    }

    // -- fiber micro-measurements (runtime/docs/fibers.md) ---------------------------------
    const fiber_bench_module = b.createModule(.{
        .root_source_file = b.path("runtime/src/fiber/bench_main.zig"),
        .target = target,
        .optimize = .ReleaseFast,
    });
    fiber_bench_module.addImport("ampere", bench_ampere);
    const fiber_bench = b.addExecutable(.{ .name = "ampere_fiber_bench", .root_module = fiber_bench_module });
    b.step("fiber-bench", "Measure fiber switch, spawn+await and idle memory (ReleaseFast)").dependOn(&b.addRunArtifact(fiber_bench).step);

    // -- comparison (all variants, statistics in Python) --------------------------------
    // The orchestrator builds both programs itself (`--build`: analysis/build.py, the one build
    // recipe), so this step holds no copy of the build commands.
    const python = b.option([]const u8, "python", "Python interpreter with the analysis package") orelse ".venv/bin/python";
    const compare = b.addSystemCommand(&.{ python, "-m", "analysis", "bench", "--build", "--compare" });
    compare.setCwd(b.path("."));
    if (b.args) |args| compare.addArgs(args);
    compare.stdio = .inherit;
    compare.has_side_effects = true;
    b.step("compare", "Build both programs and run the benchmarks (warm-up, alternating invocations, new run folder), then print the comparison table").dependOn(&compare.step);
}

fn addRuntimeTests(
    b: *std.Build,
    target: std.Build.ResolvedTarget,
    optimize: std.builtin.OptimizeMode,
    filters: []const []const u8,
    tsan: bool,
    misuse_options: *std.Build.Step.Options,
) *std.Build.Step.Compile {
    const module = b.createModule(.{
        .root_source_file = b.path("runtime/src/ampere.zig"),
        .target = target,
        .optimize = optimize,
        .sanitize_thread = if (tsan) true else null,
    });
    module.addOptions("misuse_options", misuse_options);
    return b.addTest(.{
        .name = if (tsan) "ampere-tests-tsan" else "ampere-tests",
        .root_module = module,
        .filters = filters,
        // ThreadSanitizer needs the LLVM backend; the self-hosted backend silently skips it.
        .use_llvm = if (tsan) true else null,
    });
}

fn benchModule(
    b: *std.Build,
    target: std.Build.ResolvedTarget,
    optimize: std.builtin.OptimizeMode,
    ampere: *std.Build.Module,
) *std.Build.Module {
    const module = b.createModule(.{
        .root_source_file = b.path("runtime/bench/main.zig"),
        .target = target,
        .optimize = optimize,
        // glibc malloc, the allocator Tokio's side uses too (see the fairness table).
        .link_libc = true,
    });
    module.addImport("ampere", ampere);
    module.addAnonymousImport("constants.json", .{ .root_source_file = b.path("runtime/bench/constants.json") });
    module.addAnonymousImport("variants.json", .{ .root_source_file = b.path("runtime/bench/variants.json") });
    // The op loops of the Tier 0 controls: the same source the Rust side assembles with
    // global_asm! (sync_tiers.zig says why), for every target this builds.
    module.addAssemblyFile(b.path("runtime/bench/controls_x86_64.s"));
    return module;
}

/// The io program built for `io_impl` (ReleaseFast, installed) and its tests (on `optimize`;
/// none without `test_step`); `zio` is the peer's module when `io_impl` is zio or zio.epoll.
fn addIoProgram(
    b: *std.Build,
    target: std.Build.ResolvedTarget,
    optimize: std.builtin.OptimizeMode,
    filters: []const []const u8,
    ampere: *std.Build.Module,
    io_impl: IoImpl,
    zio: ?*std.Build.Module,
    build_step: *std.Build.Step,
    test_step: ?*std.Build.Step,
) void {
    const options = b.addOptions();
    options.addOption([]const u8, "implementation", io_impl.name);
    options.addOption([]const u8, "version", io_impl.version);
    options.addOption(?[]const u8, "zio_commit", io_impl.zio_commit);
    const release = ioModule(b, target, .ReleaseFast, ampere, options, zio);
    const exe = b.addExecutable(.{ .name = io_impl.exe, .root_module = release });
    const install = b.addInstallArtifact(exe, .{});
    build_step.dependOn(&install.step);
    if (test_step) |step| {
        const tests = b.addTest(.{
            .name = b.fmt("{s}-tests", .{io_impl.exe}),
            .root_module = ioModule(b, target, optimize, ampere, options, zio),
            .filters = filters,
        });
        step.dependOn(&b.addRunArtifact(tests).step);
    }

    // The http suite's server: the same source on the same implementation.
    const http_name = io_impl.http_exe orelse return;
    const http_release = ioModule(b, target, .ReleaseFast, ampere, options, zio);
    http_release.root_source_file = b.path("runtime/bench/http_server.zig");
    const http_exe = b.addExecutable(.{ .name = http_name, .root_module = http_release });
    build_step.dependOn(&b.addInstallArtifact(http_exe, .{}).step);
    const step = test_step orelse return;
    const http_tests_module = ioModule(b, target, optimize, ampere, options, zio);
    http_tests_module.root_source_file = b.path("runtime/bench/http_server.zig");
    const http_tests = b.addTest(.{
        .name = b.fmt("{s}-tests", .{http_name}),
        .root_module = http_tests_module,
        .filters = filters,
    });
    step.dependOn(&b.addRunArtifact(http_tests).step);
}

fn ioModule(
    b: *std.Build,
    target: std.Build.ResolvedTarget,
    optimize: std.builtin.OptimizeMode,
    ampere: *std.Build.Module,
    options: *std.Build.Step.Options,
    zio: ?*std.Build.Module,
) *std.Build.Module {
    const module = b.createModule(.{
        .root_source_file = b.path("runtime/bench/io_main.zig"),
        .target = target,
        .optimize = optimize,
        .link_libc = true,
    });
    module.addImport("ampere", ampere);
    module.addOptions("io_options", options);
    if (zio) |m| module.addImport("zio", m);
    module.addAnonymousImport("constants.json", .{ .root_source_file = b.path("runtime/bench/constants.json") });
    module.addAnonymousImport("variants.json", .{ .root_source_file = b.path("runtime/bench/variants.json") });
    return module;
}
