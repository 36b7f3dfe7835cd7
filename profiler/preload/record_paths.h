// What the recording paths (record_paths.cpp) need at start: where the tracer's own code
// is, so that its frames are dropped from every stack.
#pragma once

namespace memstage::preload {

void find_own_code();

}  // namespace memstage::preload
