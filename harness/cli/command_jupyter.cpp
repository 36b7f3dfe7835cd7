// memstage jupyter install [--user | --prefix DIR] [--python PATH] [--mode MODE] [--name NAME]
// A Jupyter kernel spec whose kernel is ipykernel started under `memstage run`, so that a
// notebook's cells can be stages (`%load_ext memstage`, `%%memstage`: docs/python.md).
#include <cstdlib>
#include <filesystem>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/cli/child_process.h"
#include "harness/cli/cli_error.h"
#include "harness/cli/commands.h"
#include "harness/files/output_files.h"

namespace memstage::harness {

namespace fs = std::filesystem;

namespace {

struct JupyterFlags {
  bool user = false;
  std::string prefix;
  std::string python = "python3";
  std::string mode = "full";
  std::string name = "memstage";
};

// Where jupyter looks for kernels: the user's data folder (JUPYTER_DATA_DIR, else
// ~/.local/share/jupyter, as jupyter_core's paths say) or PREFIX/share/jupyter.
fs::path kernels_dir(const JupyterFlags& flags) {
  if (flags.user) {
    if (const char* data = getenv("JUPYTER_DATA_DIR"); data && *data) return fs::path(data) / "kernels";
    if (const char* xdg = getenv("XDG_DATA_HOME"); xdg && *xdg) return fs::path(xdg) / "jupyter" / "kernels";
    const char* home = getenv("HOME");
    if (!home || !*home) throw CliError("jupyter install --user: HOME is not set");
    return fs::path(home) / ".local" / "share" / "jupyter" / "kernels";
  }
  return fs::path(flags.prefix.empty() ? "/usr/local" : flags.prefix) / "share" / "jupyter" / "kernels";
}

// A program name as the shell would find it on PATH, made absolute: the kernel starts
// from jupyter's environment, not this one.
std::string resolve_program(const std::string& program) {
  if (program.find('/') != std::string::npos) return fs::absolute(program).string();
  if (auto found = find_on_path(program)) return *found;
  throw CliError(fmt::format("jupyter install: {} is not on PATH (give --python PATH)", program));
}

std::string this_program() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw CliError("jupyter install: cannot find memstage's own path in /proc/self/exe");
  return self.string();
}

nlohmann::ordered_json kernel_spec(const JupyterFlags& flags) {
  const std::string memstage = this_program();
  nlohmann::ordered_json spec;
  // The run folder is memstage.python3.PID beside the notebook (memstage run's default).
  spec["argv"] = {memstage, "run", "-q", "--mode", flags.mode, "--", resolve_program(flags.python),
                  "-m", "ipykernel_launcher", "-f", "{connection_file}"};
  spec["display_name"] = "Python 3 (memstage)";
  spec["language"] = "python";
  spec["env"] = {{"MEMSTAGE", memstage}};
  spec["metadata"] = {{"memstage", {{"mode", flags.mode}}}};
  return spec;
}

int install_kernel(const JupyterFlags& flags) {
  if (flags.user && !flags.prefix.empty()) throw CliError("jupyter install: --user and --prefix exclude each other");
  const fs::path dir = kernels_dir(flags) / flags.name;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw CliError(fmt::format("jupyter install: cannot make {}: {}", dir.string(), ec.message()));
  try {
    files::write_named_output_file((dir / "kernel.json").string(), kernel_spec(flags).dump(1) + "\n");
  } catch (const files::OutputError& e) {
    throw CliError(fmt::format("jupyter install: {}", e.what()));
  }
  printf("installed the Jupyter kernel \"%s\" (Python 3 (memstage)) in %s\n", flags.name.c_str(), dir.c_str());
  return 0;
}

}  // namespace

void register_jupyter(CLI::App& app, CommandAction& action) {
  CLI::App* cmd = app.add_subcommand("jupyter", "Jupyter: a kernel whose notebook runs under memstage");
  // Without its one subcommand, say which (CLI11 would say "A subcommand is required").
  cmd->callback([cmd, &action] {
    if (cmd->get_subcommands().empty()) {
      action = [] () -> int { throw CliError("jupyter: say what: memstage jupyter install [--user]"); };
    }
  });
  auto flags = std::make_shared<JupyterFlags>();
  CLI::App* install = cmd->add_subcommand("install", "Install the kernel spec \"memstage\" (Python 3 under memstage run)");
  install->add_flag("--user", flags->user, "In the user's Jupyter data folder (JUPYTER_DATA_DIR or ~/.local/share/jupyter)");
  install->add_option("--prefix", flags->prefix, "Under PREFIX/share/jupyter/kernels (default /usr/local)");
  install->add_option("--python", flags->python, "The Python that runs ipykernel (default python3 on PATH)");
  install->add_option("--mode", flags->mode, "memstage's capture mode for the kernel")
      ->check(CLI::IsMember({"full", "aggregate", "sample", "stats"}));
  install->add_option("--name", flags->name, "The kernel's name (default memstage)");
  install->callback([flags, &action] { action = [flags] { return install_kernel(*flags); }; });
}

}  // namespace memstage::harness
