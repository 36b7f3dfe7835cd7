// --serve and --serve-token, as `memstage run` and `memstage attach` take them: checked
// before anything runs, the server bound before the program starts or is attached to.
#pragma once

#include <cstdint>
#include <CLI/CLI.hpp>

#include <memory>
#include <optional>
#include <string>

#include "harness/serve/report_server.h"
#include "harness/serve/serve_options.h"
#include "reports/analysis/analyzer.h"

namespace memstage::harness {

struct ServeFlags {
  std::string address;     // --serve ADDR
  std::string token_path;  // --serve-token FILE
};

// Adds --serve and --serve-token to `cmd`.
void add_serve_options(CLI::App& cmd, ServeFlags& flags);

// What the flags of `command` ("run", "attach") ask for: nothing without --serve; a CliError
// for a bad address, a token file that cannot be read, or a token without --serve.
std::optional<ServeOptions> check_serve_flags(const ServeFlags& flags, const std::string& command);

// The server, bound (a port in use is a CliError) but not yet serving: before the run's
// folder is made, so a refusal leaves nothing behind. None without `options`.
std::unique_ptr<ReportServer> bind_server(const std::optional<ServeOptions>& options, const std::string& command);

// The server, if any, serving the run written into `dir` from now on; says where unless `quiet`.
// `followers`: the run's read-ahead of its traces, if it has one (lent: it outlives the
// server), which the served reports are read from (run_so_far.h); else followers of their own.
// `ram_limit_bytes`: the run's --ram-limit (0: none), in the reports it serves.
void start_serving(ReportServer* server, const std::string& dir, bool quiet, reports::TraceBeingWritten* followers,
                   uint64_t ram_limit_bytes = 0);

}  // namespace memstage::harness
