// The --dump DIR option shared by the CPU benchmarks.
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

namespace loom_bench {

/** Makes `dir` (and its parents) before anything runs, so that a bad path
 * is named at once rather than after minutes of runs; false, having said
 * why on stderr, if it cannot. */
inline bool make_dump_dir(const std::string &dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (!ec) return true;
    std::fprintf(stderr, "--dump %s: cannot create the directory: %s\n", dir.c_str(),
                 ec.message().c_str());
    return false;
}

}  // namespace loom_bench
