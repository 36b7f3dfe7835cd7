// What the analysis asks of memstage's own allocator (analysis_allocator.cpp).
#pragma once

namespace memstage::harness {

// Gives the pages of freed blocks back to the kernel now. jemalloc keeps them for seconds
// for the next blocks, but the analysis's next large list does not fit in them, so they
// add to its highest RSS instead. Weak: absent where memstage runs on another allocator
// (the sanitizers').
[[gnu::weak]] void return_freed_pages();

}  // namespace memstage::harness
