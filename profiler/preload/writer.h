// The writer thread: drains every thread's ring, merges the events into one order by
// their numbers (event_order.h), encodes them compactly (trace_format.h) and hands each
// chunk to a compressor thread beside it, which compresses it with zstd and writes it. It
// also ticks the samplers (time, RSS, counters).
#pragma once

#include <cstdint>

namespace memstage::preload {

// Creates the trace file for this process and writes its header, process info and
// module list. False when the file can't be created (the tracer then stays passive).
bool writer_open(uint64_t parent_pid);
// The writer thread is started when the program is about to have a second thread (or at
// once when attaching): a program that has one thread keeps one (Chromium's zygote checks
// before it forks), and the writer's rounds run on that thread at serve points instead.
// Starts it unless it runs; false when it cannot be made. `with_compressor`: and the
// chunk compressor's thread beside it, where that can be made. Not when attaching: there
// the tracer's threads are made and joined inside gdb's calls, and concurrent attaches
// with the compressor's thread too could hang, for a reason not yet known.
bool writer_start_thread(bool with_compressor);
// Where the program's own thread serves the writer's round. kCall: on its way through
// the tracer (after an allocation, before a free, at a stage edge, at a heap high), where
// it holds none of the allocator's locks; tick when due, drain, write when due. kWait: it
// is about to block (poll, waitpid...), maybe in a signal handler: a round at most once a
// sampling interval, written at once. kLongWait: it is about to sleep at least a sampling
// interval: a round with a tick, written at once. kSleeping: between two slices of a long
// sleep (tracer.h, sleep_sliced): the writer thread's periodic round.
enum class ServePoint { kCall, kWait, kLongWait, kSleeping };
// The writer's sampling interval now: --sample-interval, longer as the run ages but in
// full mode or with a RAM limit (samplers.h, aged_tick_interval_ns).
uint64_t writer_tick_interval_ns();
// Without a writer thread: one round of its work on the calling thread; nothing when the
// thread runs or a round is already in progress.
// `allocator_safe` (kSleeping): the caller knows it is outside signal handlers.
void writer_serve_inline(ServePoint point, bool allocator_safe = false);
// Writes everything recorded so far. `final`: the process is ending; nothing more will
// come, so in-flight gaps are not waited for. Safe to call from any thread; from a
// signal handler with `from_signal` (then it gives up rather than wait long).
void writer_flush(bool final, bool from_signal);
// Stops the writer thread, and the compressor after a last flush, and closes the file
// (process exit, detach).
void writer_finish();
// Fork: the parent holds the writer still while it forks; the child restarts it on a
// trace file of its own, or turns the tracer off.
void writer_before_fork();
void writer_after_fork_parent();
void writer_after_fork_child(bool follow);
// Whether it runs, its wake and when its round is due are the recording core's
// (recording_core.h: writer_thread_running, wake_writer, writer_round_due): the threads
// that record read them without calling up into the writer.

}  // namespace memstage::preload
