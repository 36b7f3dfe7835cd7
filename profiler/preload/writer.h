// The writer thread: drains every thread's ring, merges the events into one order by
// their sequence numbers, encodes them compactly (trace_format.h), compresses each chunk
// with zstd and writes it. It also ticks the samplers (time, RSS, counters).
#pragma once

#include <cstdint>

namespace memstage::preload {

// Creates the trace file for this process and writes its header, process info and
// module list. False when the file can't be created (the tracer then stays passive).
bool writer_open(uint64_t parent_pid);
bool writer_start_thread();
// Writes everything recorded so far. `final`: the process is ending; nothing more will
// come, so in-flight gaps are not waited for. Safe to call from any thread; from a
// signal handler with `from_signal` (then it gives up rather than wait long).
void writer_flush(bool final, bool from_signal);
// Stops the writer thread after a last flush and closes the file (process exit).
void writer_finish();
// Fork: the parent holds the writer still while it forks; the child restarts it on a
// trace file of its own, or turns the tracer off.
void writer_before_fork();
void writer_after_fork_parent();
void writer_after_fork_child(bool follow);
// Wakes the writer early (a ring is full).
void writer_wake();
bool writer_running();

}  // namespace memstage::preload
