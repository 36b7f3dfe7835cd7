// Is a leaked block the program's, or memory the runtime holds for the process's life: the
// C library's stdio buffers and locale data, the dynamic loader and the initializers of the
// libraries it loads (the C++ runtime's emergency exception pool), the Python interpreter's
// own objects? The one answer: the analysis classifies each leaked stack by it
// (runtime_leaks.h); every renderer reads the result, never a list of its own. As LSan's
// and heaptrack's built-in suppressions: every byte is kept, the runtime's shown apart.
#pragma once

#include <string_view>

#include "reports/analysis/allocator_frames.h"
#include "reports/model/report_model.h"

namespace memstage::reports {

enum class FrameOwner {
  kNeither,  // says nothing of who owns the block (the allocator, a library called by either)
  kRuntime,  // a runtime's own allocation for the process's life
  kProgram,  // the program's own code (for Python: a frame of the program's own files)
  kImport,   // Python's import machinery: what a library allocates as it is imported is
             // its initialization, the runtime's, even when the program's line imported it
};

inline FrameOwner frame_owner(const Frame& frame) {
  if (frame.kind == "python") {
    if (frame.file.starts_with("<frozen importlib.")) return FrameOwner::kImport;
    // The standard library, installed packages and frozen modules (<frozen importlib._bootstrap>)
    // are the interpreter's side; any other file is the program's.
    const std::string_view file = frame.file;
    const bool installed = file.starts_with("<") || file.find("/lib/python3") != std::string_view::npos ||
                           file.find("/lib64/python3") != std::string_view::npos;
    return installed ? FrameOwner::kNeither : FrameOwner::kProgram;
  }
  // The dynamic loader, and the library initializers it runs (_dl_init) before main or at dlopen.
  const std::string_view module = allocator_frames_detail::basename(frame.module);
  if (module.starts_with("ld-linux") || module.starts_with("ld64.so")) return FrameOwner::kRuntime;
  const std::string_view name = allocator_frames_detail::qualified_name(frame.function);
  for (std::string_view runtime : {"_IO_file_doallocate",  // a stdio stream's buffer, kept until exit
                                   "setlocale", "__libc_setlocale", "__gconv_open", "tzset",
                                   "(anonymous namespace)::pool::pool",  // libstdc++'s emergency EH pool
                                   "__cxa_get_globals", "std::ios_base::Init::Init"}) {
    if (name == runtime) return FrameOwner::kRuntime;
  }
  if (name.starts_with("_nl_") || name.starts_with("_dl_")) return FrameOwner::kRuntime;  // locale data, the loader
  return FrameOwner::kNeither;
}

namespace runtime_frames_detail {

// `text` matched by `pattern` as LSan matches its suppressions: anywhere in the text, `*`
// any run of characters, a leading `^` or a trailing `$` anchoring it to the start or end.
inline bool glob_matches(std::string_view text, std::string_view pattern) {
  const bool at_start = pattern.starts_with('^');
  if (at_start) pattern.remove_prefix(1);
  const bool at_end = pattern.ends_with('$');
  if (at_end) pattern.remove_suffix(1);
  // Pieces between the stars, each found after the one before.
  size_t from = 0;
  bool first = true;
  while (true) {
    const size_t star = pattern.find('*');
    const std::string_view piece = pattern.substr(0, star);
    const bool last = star == std::string_view::npos;
    if (last && at_end) {
      if (text.size() < from + piece.size() || text.substr(text.size() - piece.size()) != piece) return false;
      return !(first && at_start) || text == piece;
    }
    const size_t found = text.find(piece, from);
    if (found == std::string_view::npos || (first && at_start && found != 0)) return false;
    from = found + piece.size();
    if (last) return true;
    pattern.remove_prefix(star + 1);
    first = false;
  }
}

}  // namespace runtime_frames_detail

// A user's suppression (`leak:PATTERN` in a suppression file): the pattern matched against
// the frame's function, its source file and its module, as LSan's are.
inline bool matches_suppression(const Frame& frame, std::string_view pattern) {
  using runtime_frames_detail::glob_matches;
  return (!frame.function.empty() && glob_matches(frame.function, pattern)) ||
         (!frame.file.empty() && glob_matches(frame.file, pattern)) ||
         (!frame.module.empty() && glob_matches(frame.module, pattern));
}

}  // namespace memstage::reports
