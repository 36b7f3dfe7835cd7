// What the analysis asks of memstage's own allocator (analysis_allocator.cpp).
#pragma once

namespace memstage::harness {

// Gives the pages of freed blocks back to the kernel now. jemalloc keeps them for seconds
// for the next blocks, but the analysis's next large list does not fit in them, so they
// add to its highest RSS instead. Weak: absent where memstage runs on another allocator
// (the sanitizers').
[[gnu::weak]] void return_freed_pages();

// The allocator's arena of the calling thread, and a thread's switch to one. A thread that
// makes lists beside the main one and frees them before the main one's next large lists
// shares its arena: those then take the freed pages, where fresh ones cost a fault and
// their zeroing. Weak, as above.
[[gnu::weak]] unsigned this_thread_arena();
[[gnu::weak]] void use_arena(unsigned arena);

}  // namespace memstage::harness
