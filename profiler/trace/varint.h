// LEB128 varints and zigzag, the integer encoding of trace records (trace_format.h).
// Allocation-free: the tracer encodes inside malloc.
#pragma once

#include <cstdint>
#include <cstring>

namespace memstage::trace {

inline uint64_t zigzag_encode(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t zigzag_decode(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

// Writes v at out (at most 10 bytes) and returns the position after it.
inline uint8_t* put_varint(uint8_t* out, uint64_t v) {
  while (v >= 0x80) {
    *out++ = static_cast<uint8_t>(v) | 0x80;
    v >>= 7;
  }
  *out++ = static_cast<uint8_t>(v);
  return out;
}
inline uint8_t* put_svarint(uint8_t* out, int64_t v) { return put_varint(out, zigzag_encode(v)); }
inline uint8_t* put_bytes(uint8_t* out, const void* data, size_t n) {
  out = put_varint(out, n);
  std::memcpy(out, data, n);
  return out + n;
}
inline constexpr size_t kMaxVarintBytes = 10;

// Reads a varint from [*pos, end). False when the input ends or the varint is overlong.
inline bool get_varint(const uint8_t*& pos, const uint8_t* end, uint64_t& v) {
  v = 0;
  for (unsigned shift = 0; shift < 64; shift += 7) {
    if (pos == end) return false;
    const uint8_t byte = *pos++;
    v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if (!(byte & 0x80)) return true;
  }
  return false;
}
inline bool get_svarint(const uint8_t*& pos, const uint8_t* end, int64_t& v) {
  uint64_t u;
  if (!get_varint(pos, end, u)) return false;
  v = zigzag_decode(u);
  return true;
}

}  // namespace memstage::trace
