// `--serve ADDR` and `--serve-token FILE` as the user wrote them, checked before anything
// runs: a bad address or an unreadable token is one line and exit 2 (CliError).
#pragma once

#include <string>

namespace memstage::harness {

struct ServeOptions {
  std::string host;  // loopback unless the address names another
  int port = 0;      // 0: any free port (the one taken is printed)
  std::string token;  // empty: no token asked for
};

// "PORT" (loopback: 127.0.0.1), "HOST:PORT", "[IPV6]:PORT". `flag` names the option in
// messages ("run: --serve").
ServeOptions parse_serve_address(const std::string& address, const std::string& flag);

// The bearer token in `path`: its first line, which must not be empty.
std::string read_serve_token(const std::string& path, const std::string& flag);

// "127.0.0.1:9100", "[::1]:9100": the address as a URL writes it.
std::string url_host_port(const std::string& host, int port);

}  // namespace memstage::harness
