// memstage: where a program's memory goes, stage by stage.
#include <cstdio>
#include <cstdlib>

#include "harness/cli/cli_error.h"
#include "harness/cli/commands.h"
#include "reports/render/text/terminal_text.h"

int main(int argc, char** argv) {
  using namespace memstage::harness;
  // Messages quote stage names, paths and commands: their control characters are shown, not obeyed.
  using memstage::reports::terminal_text;
  // Symbolization reads the files on this machine; with DEBUGINFOD_URLS set, libdw would
  // download debug info for every module. Nothing is downloaded unless asked for (and
  // libdw's client is not even loaded then: debuginfod_client.cpp).
  if (!getenv("MEMSTAGE_DEBUGINFOD")) unsetenv("DEBUGINFOD_URLS");
  CLI::App app{"memstage: where a program's memory goes, stage by stage", "memstage"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "memstage " MEMSTAGE_VERSION);
  CommandAction action;
  register_run(app, action);
  register_attach(app, action);
  register_report(app, action);
  register_scale(app, action);
  register_gate(app, action);
  register_compare(app, action);
  register_diff(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fprintf(stderr, "memstage: %s (see memstage --help)\n", terminal_text(e.what()).c_str());
    return 2;
  } catch (const CliError& e) {
    fprintf(stderr, "memstage: %s\n", terminal_text(e.what()).c_str());
    return e.exit_code();
  }
  try {
    return action ? action() : 2;
  } catch (const CliError& e) {
    fprintf(stderr, "memstage: %s\n", terminal_text(e.what()).c_str());
    return e.exit_code();
  } catch (const std::exception& e) {
    fprintf(stderr, "memstage: %s\n", terminal_text(e.what()).c_str());
    return 2;
  }
}
