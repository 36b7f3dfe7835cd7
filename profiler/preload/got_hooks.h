// Attaching to a running process (`memstage attach`): gdb dlopen()s this library into the
// process and calls memstage_attach_start. A library loaded that late is not in front of
// anyone's symbol lookups, so the tracer puts its functions into the relocation slots
// (GOT entries) through which every loaded object calls the malloc family, operator
// new/delete, mmap and the rest, and puts the old values back at memstage_attach_stop.
#pragma once

namespace memstage::preload {

// True while attached: the slots point at the tracer.
bool got_hooks_active();
// After a dlopen while attached: the new objects' slots point at the tracer too.
void got_hooks_after_dlopen();

}  // namespace memstage::preload

extern "C" {
// `options`: lines "key=value": output (the folder for the trace, required), mode
// (full, stats or aggregate), max_depth, sample_interval_ms. Returns 0 once recording, else an
// AttachError.
int memstage_attach_start(const char* options);
// Puts every slot back, writes the end of the trace and closes it; the writer thread ends.
// Returns 0, or kAttachNotAttached.
int memstage_attach_stop(void);
}

namespace memstage::preload {
// memstage_attach_start's and memstage_attach_stop's results (the CLI reads them from gdb).
enum AttachError : int {
  kAttachOk = 0,
  kAttachBadOptions = 1,
  kAttachAlreadyRecording = 2,  // attached now, or started by `memstage run`
  kAttachAttachedBefore = 3,    // the tracer ran in this process once already
  kAttachCannotStart = 4,       // the trace file could not be made, or no thread started
  kAttachNotAttached = 5,
};
}  // namespace memstage::preload
