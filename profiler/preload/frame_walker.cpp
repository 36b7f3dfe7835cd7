#include "profiler/preload/frame_walker.h"

#include <dlfcn.h>

#include <cstddef>
#include <cstring>

namespace memstage::preload {

std::atomic<uint64_t> g_frame_rule_generation{0};

namespace {

// DWARF register numbers on x86-64.
constexpr uint64_t kRegRbp = 6;
constexpr uint64_t kRegRsp = 7;
constexpr uint64_t kRegReturnAddress = 16;

// Below this, a return address is no address: libunwind's fast path ends the walk there.
constexpr uint64_t kLowestReturnAddress = 0x4000;
// A walk whose frames leave this much stack behind the start is not trusted.
constexpr uint64_t kMaxStackBytes = 1ull << 30;

// Reads the unwind tables; any surprise clears `ok` and the rule is left to libunwind.
struct Reader {
  const uint8_t* p;
  const uint8_t* end;
  bool ok = true;

  bool more() const { return ok && p < end; }
  uint8_t u8() {
    if (p >= end) return fail();
    return *p++;
  }
  template <class T>
  T fixed() {
    if (end - p < static_cast<ptrdiff_t>(sizeof(T))) return static_cast<T>(fail());
    T v;
    memcpy(&v, p, sizeof v);
    p += sizeof v;
    return v;
  }
  uint64_t uleb() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p >= end) return fail();
      const uint8_t b = *p++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    return fail();
  }
  int64_t sleb() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64;) {
      if (p >= end) return static_cast<int64_t>(fail());
      const uint8_t b = *p++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      shift += 7;
      if (!(b & 0x80)) {
        if (shift < 64 && (b & 0x40)) v |= ~0ull << shift;
        return static_cast<int64_t>(v);
      }
    }
    return static_cast<int64_t>(fail());
  }
  void skip(uint64_t n) {
    if (static_cast<uint64_t>(end - p) < n) {
      fail();
      return;
    }
    p += n;
  }
  // A value in a DW_EH_PE_* format (the low 4 bits), not yet applied.
  uint64_t value(uint8_t encoding) {
    switch (encoding & 0x0f) {
      case 0x00: return fixed<uint64_t>();
      case 0x01: return uleb();
      case 0x02: return fixed<uint16_t>();
      case 0x03: return fixed<uint32_t>();
      case 0x04: return fixed<uint64_t>();
      case 0x09: return static_cast<uint64_t>(sleb());
      case 0x0a: return static_cast<uint64_t>(static_cast<int64_t>(fixed<int16_t>()));
      case 0x0b: return static_cast<uint64_t>(static_cast<int64_t>(fixed<int32_t>()));
      case 0x0c: return fixed<uint64_t>();
      default: return fail();
    }
  }
  // An encoded pointer: absolute, relative to where it is stored, or to `data_base`.
  uint64_t pointer(uint8_t encoding, uint64_t data_base) {
    const auto field = reinterpret_cast<uint64_t>(p);
    uint64_t v = value(encoding);
    switch (encoding & 0x70) {
      case 0x00: break;
      case 0x10: v += field; break;
      case 0x30:
        if (!data_base) return fail();
        v += data_base;
        break;
      default: return fail();
    }
    if (encoding & 0x80) return fail();  // indirect: not in the tables read here
    return v;
  }
  uint64_t fail() {
    ok = false;
    p = end;
    return 0;
  }
};

// The rules of the three registers a step needs, as DWARF call frame instructions leave them.
enum class Rule : uint8_t { kSame, kOffset, kUndefined, kOther };
struct Row {
  uint64_t cfa_register = ~0ull;
  int64_t cfa_offset = 0;
  bool cfa_unsupported = false;  // an expression, or a register change after one
  Rule rules[3] = {Rule::kSame, Rule::kSame, Rule::kSame};  // rbp, rsp, return address
  int64_t offsets[3] = {};
};

int tracked(uint64_t reg) {
  if (reg == kRegRbp) return 0;
  if (reg == kRegRsp) return 1;
  if (reg == kRegReturnAddress) return 2;
  return -1;
}

struct Program {
  uint64_t code_align = 1;
  int64_t data_align = 1;
  uint8_t pointer_encoding = 0;
  Row initial;  // after the CIE's instructions, for DW_CFA_restore
};

// One run of call frame instructions from `r` on `row`, while the location stays at or
// below `target` (the row for `target` is then the one in effect). Each kind of
// instruction is a step of its own: kGo on, kDone (the row is found, or the instructions
// are bad: r.ok says which), kUnsupported.
class FrameProgramRun {
 public:
  enum class Next { kGo, kDone, kUnsupported };

  FrameProgramRun(Reader r, const Program& program, uint64_t& location, uint64_t target, Row& row)
      : r_(r), program_(program), location_(location), target_(target), row_(row) {}

  bool run() {
    while (r_.more()) {
      const uint8_t op = r_.u8();
      const Next next = (op & 0xc0) ? compact(op) : op <= 0x04 ? advance_op(op) : extended(op);
      if (next == Next::kDone) return r_.ok;
      if (next == Next::kUnsupported) return false;
    }
    return r_.ok;
  }

 private:
  Next advance(uint64_t delta) {
    const uint64_t next = location_ + delta * program_.code_align;
    if (next > target_) return Next::kDone;
    location_ = next;
    return Next::kGo;
  }
  Next set(uint64_t reg, Rule rule, int64_t offset) {
    const int i = tracked(reg);
    if (i < 0) return Next::kGo;
    row_.rules[i] = rule;
    row_.offsets[i] = offset;
    return Next::kGo;
  }
  Next restore(uint64_t reg) {
    const int i = tracked(reg);
    if (i < 0) return Next::kGo;
    row_.rules[i] = program_.initial.rules[i];
    row_.offsets[i] = program_.initial.offsets[i];
    return Next::kGo;
  }
  int64_t data_offset() { return static_cast<int64_t>(r_.uleb()) * program_.data_align; }

  // The opcodes with an operand in their low six bits.
  Next compact(uint8_t op) {
    switch (op & 0xc0) {
      case 0x40: return advance(op & 0x3f);
      case 0x80: return set(op & 0x3f, Rule::kOffset, data_offset());
      default: return restore(op & 0x3f);
    }
  }

  // nop, set_loc, advance_loc1/2/4.
  Next advance_op(uint8_t op) {
    switch (op) {
      case 0x01: {
        const uint64_t next = r_.pointer(program_.pointer_encoding, 0);
        if (next > target_) return Next::kDone;
        location_ = next;
        return Next::kGo;
      }
      case 0x02: return advance(r_.u8());
      case 0x03: return advance(r_.fixed<uint16_t>());
      case 0x04: return advance(r_.fixed<uint32_t>());
      default: return Next::kGo;
    }
  }

  // The register rules and the CFA's.
  Next extended(uint8_t op) {
    switch (op) {
      case 0x05: {  // offset_extended
        const uint64_t reg = r_.uleb();
        return set(reg, Rule::kOffset, data_offset());
      }
      case 0x06: return restore(r_.uleb());
      case 0x07: return set(r_.uleb(), Rule::kUndefined, 0);
      case 0x08: return set(r_.uleb(), Rule::kSame, 0);
      case 0x09: {  // register
        const uint64_t reg = r_.uleb();
        r_.uleb();
        return set(reg, Rule::kOther, 0);
      }
      case 0x0a: return remember();
      case 0x0b: return restore_remembered();
      case 0x10:    // expression
      case 0x16: {  // val_expression
        const uint64_t reg = r_.uleb();
        r_.skip(r_.uleb());
        return set(reg, Rule::kOther, 0);
      }
      case 0x11: {  // offset_extended_sf
        const uint64_t reg = r_.uleb();
        return set(reg, Rule::kOffset, r_.sleb() * program_.data_align);
      }
      case 0x14:    // val_offset
      case 0x15: {  // val_offset_sf
        const uint64_t reg = r_.uleb();
        op == 0x14 ? static_cast<void>(r_.uleb()) : static_cast<void>(r_.sleb());
        return set(reg, Rule::kOther, 0);
      }
      case 0x2e: r_.uleb(); return Next::kGo;  // GNU_args_size
      case 0x2f: {                             // GNU_negative_offset_extended
        const uint64_t reg = r_.uleb();
        return set(reg, Rule::kOffset, -data_offset());
      }
      default: return cfa(op);
    }
  }

  Next cfa(uint8_t op) {
    switch (op) {
      case 0x0c:  // def_cfa
        row_.cfa_register = r_.uleb();
        row_.cfa_offset = static_cast<int64_t>(r_.uleb());
        row_.cfa_unsupported = false;
        return Next::kGo;
      case 0x0d: row_.cfa_register = r_.uleb(); return Next::kGo;
      case 0x0e: row_.cfa_offset = static_cast<int64_t>(r_.uleb()); return Next::kGo;
      case 0x0f:  // def_cfa_expression
        r_.skip(r_.uleb());
        row_.cfa_unsupported = true;
        return Next::kGo;
      case 0x12:  // def_cfa_sf
        row_.cfa_register = r_.uleb();
        row_.cfa_offset = r_.sleb() * program_.data_align;
        row_.cfa_unsupported = false;
        return Next::kGo;
      case 0x13: row_.cfa_offset = r_.sleb() * program_.data_align; return Next::kGo;
      default: return Next::kUnsupported;
    }
  }

  Next remember() {
    if (remembered_count_ == kMaxRemembered) return Next::kUnsupported;
    remembered_[remembered_count_++] = row_;
    return Next::kGo;
  }
  Next restore_remembered() {
    if (remembered_count_ == 0) return Next::kUnsupported;
    row_ = remembered_[--remembered_count_];
    return Next::kGo;
  }

  static constexpr int kMaxRemembered = 16;
  Reader r_;
  const Program& program_;
  uint64_t& location_;
  const uint64_t target_;
  Row& row_;
  Row remembered_[kMaxRemembered];
  int remembered_count_ = 0;
};

bool run(Reader r, const Program& program, uint64_t& location, uint64_t target, Row& row) {
  return FrameProgramRun(r, program, location, target, row).run();
}

// The FDE that covers `pc`, through the object's .eh_frame_hdr search table.
const uint8_t* find_fde(uint64_t pc) {
  dl_find_object object;
  if (_dl_find_object(reinterpret_cast<void*>(pc), &object) != 0 || !object.dlfo_eh_frame) return nullptr;
  const auto* header = static_cast<const uint8_t*>(object.dlfo_eh_frame);
  const auto header_base = reinterpret_cast<uint64_t>(header);
  Reader r{header, header + 64};
  const uint8_t version = r.u8();
  const uint8_t frame_pointer_encoding = r.u8();
  const uint8_t count_encoding = r.u8();
  const uint8_t table_encoding = r.u8();
  // The table as linkers write it: pairs of 32-bit offsets from the header, sorted.
  if (version != 1 || table_encoding != 0x3b || count_encoding == 0xff) return nullptr;
  r.pointer(frame_pointer_encoding, header_base);
  const uint64_t count = r.pointer(count_encoding, header_base);
  if (!r.ok || count == 0) return nullptr;
  const auto* table = reinterpret_cast<const int32_t*>(r.p);
  // The last entry whose start is at or below pc.
  uint64_t low = 0, high = count;
  while (high - low > 1) {
    const uint64_t mid = low + (high - low) / 2;
    if (header_base + static_cast<int64_t>(table[2 * mid]) <= pc) {
      low = mid;
    } else {
      high = mid;
    }
  }
  if (header_base + static_cast<int64_t>(table[2 * low]) > pc) return nullptr;
  return header + static_cast<int64_t>(table[2 * low + 1]);
}

FrameRule unsupported(uint64_t pc) {
  FrameRule rule{};
  rule.pc = pc;
  rule.kind = FrameRule::kUnsupported;
  return rule;
}

// The FDE at `fde` and its CIE, each a reader of its own bytes: `f` after the CIE pointer,
// `c` after the CIE's id. False where a length is 0 (the end marker) or ~0 (64-bit DWARF,
// not expected), or the CIE is none.
bool open_fde(const uint8_t* fde, Reader& f, Reader& c) {
  f = Reader{fde, fde + 8};
  const uint32_t fde_length = f.fixed<uint32_t>();
  if (!f.ok || fde_length == 0 || fde_length == 0xffffffffu) return false;
  f.end = fde + 4 + fde_length;
  const uint8_t* cie_pointer_field = f.p;
  const uint32_t cie_offset = f.fixed<uint32_t>();
  if (!f.ok || cie_offset == 0) return false;
  const uint8_t* cie = cie_pointer_field - cie_offset;
  c = Reader{cie, cie + 8};
  const uint32_t cie_length = c.fixed<uint32_t>();
  if (!c.ok || cie_length == 0 || cie_length == 0xffffffffu) return false;
  c.end = cie + 4 + cie_length;
  return c.fixed<uint32_t>() == 0;  // a CIE's id
}

// The CIE's fields from its version to its initial instructions (where `c` is left) into
// `program`; `has_data`: it has augmentation data ('z'), and so has its FDEs. False for
// what this reader does not take ('S', a signal frame, among others).
bool read_cie(Reader& c, Program& program, bool& has_data) {
  const uint8_t version = c.u8();
  if (version != 1 && version != 3) return false;
  char augmentation[8];
  size_t augmentation_length = 0;
  for (;;) {
    const uint8_t ch = c.u8();
    if (!c.ok || augmentation_length == sizeof(augmentation)) return false;
    augmentation[augmentation_length] = static_cast<char>(ch);
    if (ch == 0) break;
    ++augmentation_length;
  }
  program.code_align = c.uleb();
  program.data_align = c.sleb();
  const uint64_t return_register = version == 1 ? c.u8() : c.uleb();
  if (!c.ok || return_register != kRegReturnAddress) return false;
  has_data = augmentation_length > 0 && augmentation[0] == 'z';
  if (augmentation_length > 0 && !has_data) return false;
  if (!has_data) return true;
  const uint64_t data_length = c.uleb();
  const uint8_t* data_end = c.p + data_length;
  for (size_t i = 1; i < augmentation_length; ++i) {
    switch (augmentation[i]) {
      case 'R': program.pointer_encoding = c.u8(); break;
      case 'L': c.u8(); break;
      case 'P': c.value(c.u8()); break;  // the personality routine: only skipped
      default: return false;
    }
  }
  if (!c.ok || c.p > data_end || data_end > c.end) return false;
  c.p = data_end;
  return true;
}

// The rule a step takes at `pc`, from the row in effect there.
FrameRule rule_of_row(uint64_t pc, const Row& row) {
  FrameRule rule = unsupported(pc);
  const Rule rbp = row.rules[0], rsp = row.rules[1], return_address = row.rules[2];
  if (row.cfa_unsupported || (row.cfa_register != kRegRsp && row.cfa_register != kRegRbp)) return rule;
  if (rsp != Rule::kSame || rbp == Rule::kOther || return_address == Rule::kOther) return rule;
  // libunwind ends the stack where the return address or rbp is undefined (the x86-64
  // ABI's mark of the outermost frame).
  if (return_address == Rule::kUndefined || rbp == Rule::kUndefined) {
    rule.kind = FrameRule::kLastFrame;
    return rule;
  }
  if (return_address != Rule::kOffset || row.offsets[2] != -8) return rule;
  if (row.cfa_offset < INT32_MIN || row.cfa_offset > INT32_MAX) return rule;
  if (rbp == Rule::kOffset) {
    if (row.offsets[0] < INT16_MIN || row.offsets[0] > INT16_MAX) return rule;
    rule.flags = FrameRule::kRbpSaved;
    rule.rbp_offset = static_cast<int16_t>(row.offsets[0]);
  }
  rule.cfa_offset = static_cast<int32_t>(row.cfa_offset);
  rule.kind = row.cfa_register == kRegRsp ? FrameRule::kCfaRsp : FrameRule::kCfaRbp;
  return rule;
}

}  // namespace

FrameRule frame_rule_for(uint64_t pc) {
  const uint8_t* fde = find_fde(pc);
  Reader f{nullptr, nullptr}, c{nullptr, nullptr};
  Program program;
  bool has_data = false;
  if (!fde || !open_fde(fde, f, c) || !read_cie(c, program, has_data)) return unsupported(pc);
  uint64_t location = 0;
  Row row;
  if (!run(c, program, location, ~0ull, row)) return unsupported(pc);
  program.initial = row;

  const uint64_t pc_begin = f.pointer(program.pointer_encoding, 0);
  const uint64_t pc_range = f.value(program.pointer_encoding);
  if (has_data) f.skip(f.uleb());
  if (!f.ok || pc < pc_begin || pc - pc_begin >= pc_range) return unsupported(pc);
  location = pc_begin;
  if (!run(f, program, location, pc, row)) return unsupported(pc);
  return rule_of_row(pc, row);
}

namespace {

// -1 when every word the last walk read from its step `from` outwards still holds what it
// read then, and its frames stay within reach of `start_rsp`; else the step where the
// first difference is (checked from the inside out: the first difference ends it, so only
// words the walk itself would read are read), 0 for one out of reach.
int64_t last_walk_differs_at(const WalkCache& cache, uint32_t from, uint64_t start_rsp) {
  if (cache.last[0].cfa - start_rsp > kMaxStackBytes) return 0;
  for (uint32_t i = from + 1; i-- > 0;) {
    const WalkStep& s = cache.last[i];
    if (*reinterpret_cast<const uint64_t*>(s.cfa - 8) != s.return_address) return i;
    if (s.saved_rbp_used && *reinterpret_cast<const uint64_t*>(s.cfa + s.rbp_offset) != s.saved_rbp) return i;
  }
  return -1;
}

// The running walk's `count` steps become the thread's last walk, placed inside the
// `kept` outer steps of the last one; which rbp values its steps use is found from the
// outermost inwards (past the walk's end, none).
void keep_walk(WalkCache& cache, uint32_t kept, uint32_t count, bool complete, bool ends_without_frame) {
  bool used_further_out = kept > 0 && cache.last[kept - 1].rbp_used;
  for (uint32_t i = 0; i < count; ++i) {
    WalkStep& step = cache.last[kept + i];
    step = cache.fresh[count - 1 - i];
    step.saved_rbp_used = step.rbp_saved && used_further_out;
    step.rbp_used = step.cfa_from_rbp || (!step.rbp_saved && used_further_out);
    used_further_out = step.rbp_used;
  }
  cache.last_count = kept + count;
  if (kept == 0) {
    cache.last_complete = complete;
    cache.last_ends_without_frame = ends_without_frame;
  }
}

// The walk ends with its `steps` fresh steps kept as the thread's last walk, `n` frames out.
inline int end_fresh_walk(WalkCache& cache, uint32_t steps, int n, bool complete, bool ends_without_frame) {
  keep_walk(cache, 0, steps, complete, ends_without_frame);
  cache.last_output_count = n;
  return n;
}

// One step outwards by `slot`'s rule from the frame at (pc, rsp, rbp), whose CFA is `cfa`,
// noted in `step`: rbp becomes the caller's; returns the return address. Inlined: the walk
// stays one piece of machine code, the hot path of full and aggregate modes.
__attribute__((always_inline)) inline uint64_t step_out(WalkStep& step, const FrameRule& slot, uint64_t pc,
                                                        uint64_t rsp, uint64_t& rbp, uint64_t cfa) {
  step.pc = pc;
  step.rsp = rsp;
  step.rbp = rbp;
  step.cfa = cfa;
  step.rbp_saved = (slot.flags & FrameRule::kRbpSaved) != 0;
  step.rbp_offset = slot.rbp_offset;
  step.cfa_from_rbp = slot.kind == FrameRule::kCfaRbp;
  const uint64_t return_address = *reinterpret_cast<const uint64_t*>(cfa - 8);
  if (step.rbp_saved) rbp = *reinterpret_cast<const uint64_t*>(cfa + slot.rbp_offset);
  step.return_address = return_address;
  step.saved_rbp = rbp;
  return return_address;
}

}  // namespace

// The rule slot of an address: the top bits of its product with a large odd constant.
constexpr int kRuleSlotShift = 64 - __builtin_ctz(WalkCache::kRuleSlots);
static_assert(WalkCache::kRuleSlots == 1u << (64 - kRuleSlotShift), "kRuleSlots is a power of two");

int walk_frames(WalkCache& cache, uint64_t start_pc, uint64_t start_rsp, uint64_t start_rbp, uint64_t* out, int max,
                bool out_if_repeated) {
  const WalkStart start{start_pc, start_rsp, start_rbp};
  cache.repeated = false;
  if (max < 0 || static_cast<uint32_t>(max) > WalkCache::kMaxSteps) return kLeaveToLibunwind;
  const uint64_t generation = g_frame_rule_generation.load(std::memory_order_acquire);
  if (cache.generation != generation) {
    for (FrameRule& slot : cache.rules) slot = FrameRule{};
    cache.last_count = 0;
    cache.last_output_count = -1;
    cache.generation = generation;
  }
  uint64_t rsp = start.rsp, rbp = start.rbp;
  // The first frame runs at pc; the others are at a return address, whose call
  // instruction (the byte before it) is the one whose rule applies.
  uint64_t pc = start.pc;
  int n = 0;
  // The last walk's step whose rsp is the first not below this one's (its steps are
  // outermost first: rsp falls with the index); -1 once none can be the same.
  int64_t match = static_cast<int64_t>(cache.last_count) - 1;
  while (n < max) {
    while (match >= 0 && cache.last[match].rsp < rsp) --match;
    if (match >= 0 && cache.last[match].rsp == rsp && cache.last[match].pc == pc &&
        (!cache.last[match].rbp_used || cache.last[match].rbp == rbp)) {
      const auto from = static_cast<uint32_t>(match);
      const uint32_t first_frame = cache.last_ends_without_frame ? 1 : 0;  // outermost step with a frame
      const int available = static_cast<int>(from + 1 - first_frame);
      // Far enough out (a walk cut at its maximum is not taken for more frames than it has).
      const bool enough = cache.last_complete || n + available >= max;
      const int64_t differs_at = enough ? last_walk_differs_at(cache, from, start.rsp) : 0;
      if (differs_at < 0) {
        const int fresh = n;
        const int count = n + available < max ? n + available : max;
        // From the last walk's first step on: its frames, all of them, when it returned as many.
        cache.repeated = fresh == 0 && from + 1 == cache.last_count && count == cache.last_output_count;
        if (cache.repeated && !out_if_repeated) {
          n = count;
        } else {
          for (uint32_t i = from + 1; i-- > first_frame && n < max;) out[n++] = cache.last[i].return_address;
        }
        if (fresh) {
          keep_walk(cache, from + 1, static_cast<uint32_t>(fresh), false, false);
        } else {
          cache.last_count = from + 1;  // keep_walk with no step of its own, without the call
        }
        cache.last_output_count = n;
        return n;
      }
      // The stack differs there: walked on, and a step further out may still start where
      // the last walk's did.
      match = differs_at - 1;
    }
    FrameRule& slot = cache.rules[(pc * 0x9e3779b97f4a7c15ull) >> kRuleSlotShift];
    if (slot.pc != pc) slot = frame_rule_for(pc);
    uint64_t cfa;
    switch (slot.kind) {
      case FrameRule::kCfaRsp: cfa = rsp + static_cast<int64_t>(slot.cfa_offset); break;
      case FrameRule::kCfaRbp: cfa = rbp + static_cast<int64_t>(slot.cfa_offset); break;
      case FrameRule::kLastFrame: return end_fresh_walk(cache, static_cast<uint32_t>(n), n, true, false);
      default: return kLeaveToLibunwind;
    }
    // Frames lie above one another on one stack; anything else is left to libunwind.
    if (cfa <= rsp || cfa - start.rsp > kMaxStackBytes || (cfa & 7) != 0) return kLeaveToLibunwind;
    const uint64_t return_address = step_out(cache.fresh[n], slot, pc, rsp, rbp, cfa);
    rsp = cfa;
    if (return_address < kLowestReturnAddress) return end_fresh_walk(cache, static_cast<uint32_t>(n + 1), n, true, true);
    out[n++] = return_address;
    pc = return_address - 1;
  }
  return end_fresh_walk(cache, static_cast<uint32_t>(n), n, false, false);
}

}  // namespace memstage::preload
