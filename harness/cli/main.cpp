// memstage: where a program's memory goes, stage by stage.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "harness/cli/cli_error.h"
#include "harness/cli/commands.h"
#include "reports/render/text/terminal_text.h"

namespace {

CLI::App* find_command(CLI::App& app, const std::string& word) {
  const auto found = app.get_subcommands([&word](CLI::App* command) { return command->get_name() == word; });
  return found.empty() ? nullptr : found.front();
}

// `memstage run ./prog --help` asks ./prog for its help, as env(1) and time(1) would: the
// command of a subcommand that runs one (run, compare, scale) starts at the first word that
// is not one of the subcommand's options, and a "--" put there keeps CLI11 from reading the
// command's flags as memstage's.
void mark_command_start(CLI::App& app, std::vector<std::string>& args) {
  CLI::App* subcommand = args.empty() ? nullptr : find_command(app, args[0]);
  if (!subcommand || !subcommand->get_option_no_throw("command")) return;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--") return;
    if (!word.starts_with("-") || word == "-") {
      args.insert(args.begin() + static_cast<std::ptrdiff_t>(i), "--");
      return;
    }
    // "-qo DIR": a cluster of short flags takes a value when its last one does.
    const std::string name = word.starts_with("--") || word.size() <= 2 ? word : std::string("-") + word.back();
    const CLI::Option* option = word.find('=') == std::string::npos ? subcommand->get_option_no_throw(name) : nullptr;
    if (option && option->get_items_expected_min() > 0) ++i;  // the option's value (a flag expects none)
    // An optional value (--suggest [STAGE]) is taken as the option's only where a "--" further
    // on says where the command starts; without one, the next word starts the command.
    const bool explicit_end = std::find(args.begin() + static_cast<std::ptrdiff_t>(i), args.end(), "--") != args.end();
    const bool next_is_word = i + 1 < args.size() && !args[i + 1].starts_with("-");
    if (option && option->get_items_expected_min() == 0 && option->get_items_expected_max() > 0 && explicit_end &&
        next_is_word) {
      ++i;
    }
  }
}

}  // namespace

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
  register_jupyter(app, action);
  register_live(app, action);
  register_replay(app, action);
  // "memstage help [COMMAND]" is "memstage [COMMAND] --help", as git and cargo take it.
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "help") {
    args.erase(args.begin());
    args.resize(std::min<size_t>(args.size(), 1));
    args.push_back("--help");
  }
  // A first word that is no option and no command: CLI11 would say "A subcommand is required".
  if (!args.empty() && !args[0].starts_with("-") && !find_command(app, args[0])) {
    fprintf(stderr, "memstage: unknown command '%s' (commands: run, attach, report, scale, gate, compare, diff; "
            "see memstage --help)\n", terminal_text(args[0]).c_str());
    return 2;
  }
  mark_command_start(app, args);
  std::reverse(args.begin(), args.end());  // CLI11 takes its arguments last first
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // The help of the command the mistake was made in, not of memstage as a whole.
    const auto parsed = app.get_subcommands();
    const std::string help = parsed.empty() ? "memstage --help" : "memstage " + parsed.back()->get_name() + " --help";
    fprintf(stderr, "memstage: %s (see %s)\n", terminal_text(e.what()).c_str(), help.c_str());
    return 2;
  } catch (const CliError& e) {
    fprintf(stderr, "memstage: %s\n", terminal_text(e.what()).c_str());
    return e.exit_code();
  }
  try {
    const int status = action ? action() : 2;
    // A report written to a full disk or a closed descriptor through stdout fails here,
    // at the flush, not at the write into stdio's buffer.
    const bool flushed = fflush(stdout) == 0;
    const int error = errno;
    if (!flushed || ferror(stdout)) {
      fprintf(stderr, "memstage: cannot write to standard output: %s\n", flushed ? "a write failed" : strerror(error));
      return status != 0 ? status : 2;
    }
    return status;
  } catch (const CliError& e) {
    fprintf(stderr, "memstage: %s\n", terminal_text(e.what()).c_str());
    return e.exit_code();
  } catch (const std::exception& e) {
    fprintf(stderr, "memstage: %s\n", terminal_text(e.what()).c_str());
    return 2;
  }
}
