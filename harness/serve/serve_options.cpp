#include "harness/serve/serve_options.h"

#include <charconv>

#include "harness/cli/cli_error.h"
#include "harness/files/input_files.h"

namespace memstage::harness {

namespace {

int parse_port(const std::string& text, const std::string& address, const std::string& flag) {
  int port = -1;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || port < 0 || port > 65535) {
    throw CliError(flag + " takes PORT or HOST:PORT (a port from 0 to 65535), not '" + address + "'");
  }
  return port;
}

}  // namespace

ServeOptions parse_serve_address(const std::string& address, const std::string& flag) {
  ServeOptions options;
  const auto colon = address.rfind(':');
  if (colon == std::string::npos) {
    options.host = "127.0.0.1";
    options.port = parse_port(address, address, flag);
    return options;
  }
  options.host = address.substr(0, colon);
  if (options.host.size() >= 2 && options.host.front() == '[' && options.host.back() == ']') {
    options.host = options.host.substr(1, options.host.size() - 2);
  } else if (options.host.find(':') != std::string::npos) {
    throw CliError(flag + ": an IPv6 address goes in brackets ([::1]:9100), not '" + address + "'");
  }
  if (options.host.empty()) throw CliError(flag + " names no host before the port in '" + address + "'");
  options.port = parse_port(address.substr(colon + 1), address, flag);
  return options;
}

std::string read_serve_token(const std::string& path, const std::string& flag) {
  constexpr size_t kMaxTokenFileBytes = 4096;
  std::string text;
  try {
    text = files::read_input_file(path, "token", kMaxTokenFileBytes);
  } catch (const files::InputError& e) {
    throw CliError(flag + ": " + e.what());
  }
  std::string token = text.substr(0, text.find('\n'));
  while (!token.empty() && (token.back() == '\r' || token.back() == ' ' || token.back() == '\t')) token.pop_back();
  if (token.empty()) throw CliError(flag + ": " + path + " has no token on its first line");
  return token;
}

std::string url_host_port(const std::string& host, int port) {
  const bool ipv6 = host.find(':') != std::string::npos;
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

}  // namespace memstage::harness
