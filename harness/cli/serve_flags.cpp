#include "harness/cli/serve_flags.h"

#include <cstdio>

#include "harness/cli/cli_error.h"
#include "harness/cli/preload_path.h"
#include "harness/serve/http_endpoint.h"
#include "harness/serve/run_so_far.h"
#include "reports/analysis/analyzer.h"

namespace memstage::harness {

void add_serve_options(CLI::App& cmd, ServeFlags& flags) {
  cmd.add_option("--serve", flags.address,
                 "Answer the run so far over HTTP while it runs: /metrics (Prometheus), /debug/pprof/heap and "
                 "/debug/pprof/allocs (pprof), /report.json, / (docs/serving.md). ADDR: PORT (on 127.0.0.1) or "
                 "HOST:PORT");
  cmd.add_option("--serve-token", flags.token_path,
                 "With --serve: answer only requests bearing the token in FILE (Authorization: Bearer TOKEN)");
}

std::optional<ServeOptions> check_serve_flags(const ServeFlags& flags, const std::string& command) {
  if (flags.address.empty()) {
    if (!flags.token_path.empty()) throw CliError(command + ": --serve-token needs --serve ADDR");
    return std::nullopt;
  }
  ServeOptions options = parse_serve_address(flags.address, command + ": --serve");
  if (!flags.token_path.empty()) options.token = read_serve_token(flags.token_path, command + ": --serve-token");
  return options;
}

std::unique_ptr<ReportServer> bind_server(const std::optional<ServeOptions>& options, const std::string& command) {
  if (!options) return nullptr;
  return std::make_unique<ReportServer>(*options, find_memstage_library(kHttpModuleName), command + ": --serve");
}

void start_serving(ReportServer* server, const std::string& dir, bool quiet, reports::TraceBeingWritten* followers,
                   uint64_t ram_limit_bytes) {
  if (!server) return;
  auto run = std::make_shared<RunSoFar>(dir, followers);
  server->start([run, ram_limit_bytes] {
    std::optional<reports::Report> report = run->report();
    if (report && ram_limit_bytes) reports::note_ram_limit(*report, ram_limit_bytes);
    return report;
  });
  if (!quiet) {
    fprintf(stderr, "memstage: serving the run so far at http://%s/ (/metrics, /debug/pprof/heap, /report.json)\n",
            server->host_port().c_str());
  }
}

}  // namespace memstage::harness
