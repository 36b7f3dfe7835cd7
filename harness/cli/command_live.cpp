// memstage live DIR: the live view (live_view.h) of a run being written in DIR, from
// another terminal than the program's (whose output then stays its own).
#include <unistd.h>

#include <filesystem>
#include <memory>

#include "harness/cli/cli_error.h"
#include "harness/cli/commands.h"
#include "harness/cli/live_view.h"

namespace memstage::harness {

void register_live(CLI::App& app, CommandAction& action) {
  auto dir = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("live", "Watch a run being written (its folder) on a terminal screen; q leaves");
  cmd->add_option("dir", *dir, "The run's output folder (memstage run -o DIR)")->required();
  cmd->callback([dir, &action] {
    action = [dir] {
      std::error_code ec;
      if (!std::filesystem::is_directory(*dir, ec)) throw CliError("live: " + *dir + " is not a folder");
      if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) throw CliError("live: needs a terminal");
      // Its own reading of the traces, which keeps no events: nothing replays them.
      reports::AnalysisOptions options;
      options.max_event_log_bytes = 0;
      reports::TraceBeingWritten traces(*dir, options);
      run_live_view(*dir, traces, [] { return true; }, true);
      return 0;
    };
  });
}

}  // namespace memstage::harness
