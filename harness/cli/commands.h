// The subcommands of `memstage`, one file each. Registering one adds its flags to the
// app and sets `action` to what runs when the user picked it.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace memstage::harness {

using CommandAction = std::function<int()>;

void register_run(CLI::App& app, CommandAction& action);
void register_attach(CLI::App& app, CommandAction& action);
void register_report(CLI::App& app, CommandAction& action);
void register_scale(CLI::App& app, CommandAction& action);
void register_gate(CLI::App& app, CommandAction& action);
void register_compare(CLI::App& app, CommandAction& action);
void register_diff(CLI::App& app, CommandAction& action);
void register_jupyter(CLI::App& app, CommandAction& action);
void register_live(CLI::App& app, CommandAction& action);
void register_replay(CLI::App& app, CommandAction& action);

}  // namespace memstage::harness
