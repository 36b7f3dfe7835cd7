// Every file memstage writes (run.json, report.json, report.html, the gate's JUnit file,
// diff's page, compare's and scale's outputs) goes through here. An output folder may be
// one that others can write to: a link planted there under an output's name must not be
// followed, or a root `memstage run` would overwrite what it points to.
#pragma once

#include <stdexcept>
#include <string>

namespace memstage::files {

// A file or folder that could not be written; the message is one line naming it.
class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Writes `content` to `path` whole: into a new temporary file beside it (created with
// O_CREAT | O_EXCL | O_NOFOLLOW, so nothing that exists, link or not, is opened), then
// renamed over `path` (a rename replaces a link, it never writes through one). A reader
// never sees half a file; on failure (a full disk) the temporary is removed and `path`
// is left as it was. Mode 0600 when `private_file`, else 0644 less the umask.
void write_output_file(const std::string& path, const std::string& content, bool private_file = false);

// A file the user named on the command line (report -o FILE, diff --html FILE, gate --junit
// FILE): where that name is a device, FIFO or socket (/dev/null, /dev/stdout, a pipe), the
// content is written to it as a stream, as a shell's redirection would, never renamed over
// it; a folder is refused; anything else is written as write_output_file does. Names
// memstage picks inside an output folder never go through here: a link planted there must
// not lead it to a device.
void write_named_output_file(const std::string& path, const std::string& content);

// Makes `dir` and its missing parents; the folders memstage creates are 0700 (traces
// and reports hold command lines, paths and symbol names). An existing folder is kept
// as it is; a link where the folder should be is refused.
void create_output_folder(const std::string& dir);

}  // namespace memstage::files
