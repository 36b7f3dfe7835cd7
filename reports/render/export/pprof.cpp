// pprof export: profile.proto (github.com/google/pprof/proto/profile.proto), gzipped as
// pprof expects. Frames are already symbolized, so every mapping says so and pprof does not
// try to symbolize again from binaries that may not exist where the profile is read.
#include "reports/render/export/pprof.h"

#include <initializer_list>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>
#include <zlib.h>

#include "profile.pb.h"
#include "reports/render/frame_label.h"

namespace memstage::reports {
namespace {

namespace pp = perftools::profiles;

class StringTable {
 public:
  explicit StringTable(pp::Profile& profile) : profile_(profile) { add(""); }  // [0] must be ""
  int64_t add(const std::string& s) {
    auto [it, added] = ids_.try_emplace(s, static_cast<int64_t>(ids_.size()));
    if (added) profile_.add_string_table(s);
    return it->second;
  }

 private:
  pp::Profile& profile_;
  std::unordered_map<std::string, int64_t> ids_;
};

// gzip of what a protobuf stream writes, appended to `out` as it comes (protobuf's own
// GzipOutputStream is in its full runtime only). At zlib's fastest level, as Go's
// runtime/pprof writes its profiles: torch_small.py's 108 MB export deflates in 0.27 s
// instead of 0.59 s at the default level, to 6.5 MB instead of 5.2.
class GzipSink final : public google::protobuf::io::CopyingOutputStream {
 public:
  explicit GzipSink(std::string& out) : out_(out) {
    constexpr int kGzipWindowBits = 15 + 16;  // the largest window, with a gzip header
    constexpr int kDefaultMemLevel = 8;
    if (deflateInit2(&stream_, Z_BEST_SPEED, Z_DEFLATED, kGzipWindowBits, kDefaultMemLevel,
                     Z_DEFAULT_STRATEGY) != Z_OK) {
      throw std::runtime_error("render_pprof: gzip failed: out of memory");
    }
  }
  GzipSink(const GzipSink&) = delete;
  GzipSink& operator=(const GzipSink&) = delete;
  ~GzipSink() override { deflateEnd(&stream_); }

  bool Write(const void* buffer, int size) override { return deflate_bytes(buffer, size, Z_NO_FLUSH); }

  void finish() {
    if (!deflate_bytes(nullptr, 0, Z_FINISH)) {
      throw std::runtime_error(std::string("render_pprof: gzip failed: ") + (stream_.msg ? stream_.msg : "unknown error"));
    }
  }

 private:
  bool deflate_bytes(const void* buffer, int size, int flush) {
    stream_.next_in = static_cast<Bytef*>(const_cast<void*>(buffer));
    stream_.avail_in = static_cast<uInt>(size);
    for (;;) {
      stream_.next_out = chunk_.data();
      stream_.avail_out = static_cast<uInt>(chunk_.size());
      const int rc = deflate(&stream_, flush);
      out_.append(reinterpret_cast<const char*>(chunk_.data()), chunk_.size() - stream_.avail_out);
      if (rc == Z_STREAM_END) return true;
      if (rc != Z_OK && rc != Z_BUF_ERROR) return false;
      // Done with this input once deflate left output space unused.
      if (flush == Z_NO_FLUSH && stream_.avail_in == 0 && stream_.avail_out != 0) return true;
    }
  }

  std::string& out_;
  std::vector<Bytef> chunk_ = std::vector<Bytef>(64 * 1024);
  z_stream stream_{};
};

class ProfileBuilder {
 public:
  explicit ProfileBuilder(pp::Profile& profile) : profile_(profile), strings_(profile) {}

  StringTable& strings() { return strings_; }

  // Appends the location ids of a stack to `ids`, leaf first. Like pprof's own heap
  // profiles, the leaf is the program's frame that asked for memory: the allocation plumbing
  // below it (the model's Frame::allocator) is left out. Inlined frames share their caller's
  // address, so a run of inlined frames and the frame they are inlined into make one
  // location whose lines go innermost first, as profile.proto asks. The same stack always
  // gets the same ids: a location is built once, when first met.
  void locations(const Report& report, const Stack& stack, google::protobuf::RepeatedField<uint64_t>& ids) {
    group_.clear();
    for (const FrameIndex id : program_frames(report, stack)) {
      group_.push_back(id);
      if (report.frame(id).inlined) continue;
      ids.Add(location(report, group_));
      group_.clear();
    }
    if (!group_.empty()) ids.Add(location(report, group_));
  }

 private:
  // By the report's frame indices first: each distinct run of frames builds its key once.
  // Most runs are one frame (nothing inlined there).
  uint64_t location(const Report& report, const std::vector<FrameIndex>& group) {
    if (group.size() == 1) {
      if (location_of_frame_.empty()) location_of_frame_.resize(report.frames.size(), 0);
      uint64_t& id = location_of_frame_[group[0]];
      if (id == 0) id = build_location(report, group);
      return id;
    }
    std::string ids(reinterpret_cast<const char*>(group.data()), group.size() * sizeof(FrameIndex));
    auto [known, added] = locations_by_frames_.try_emplace(std::move(ids), 0);
    if (added) known->second = build_location(report, group);
    return known->second;
  }

  uint64_t build_location(const Report& report, const std::vector<FrameIndex>& ids) {
    const Frame& outer = report.frame(ids.back());
    std::string key = outer.module + '\x1f' + std::to_string(outer.address);
    for (FrameIndex id : ids) {
      const Frame& f = report.frame(id);
      key += '\x1f' + f.function + '\x1f' + f.file + '\x1f' + std::to_string(f.line);
    }
    auto [it, added] = locations_.try_emplace(key, static_cast<uint64_t>(locations_.size() + 1));
    if (!added) return it->second;
    auto* loc = profile_.add_location();
    loc->set_id(it->second);
    loc->set_address(outer.address);
    if (outer.kind == "native" && !outer.module.empty()) loc->set_mapping_id(mapping(outer));
    for (FrameIndex id : ids) {
      auto* line = loc->add_line();
      line->set_function_id(function(report.frame(id)));
      line->set_line(report.frame(id).line);
    }
    return it->second;
  }

  uint64_t function(const Frame& f) {
    // Without a symbol, name the function by where it is, as the HTML report does.
    const std::string name = frame_label(f);
    auto [it, added] = functions_.try_emplace(name + '\x1f' + f.file, static_cast<uint64_t>(functions_.size() + 1));
    if (!added) return it->second;
    auto* fn = profile_.add_function();
    fn->set_id(it->second);
    fn->set_name(strings_.add(name));
    fn->set_system_name(fn->name());
    fn->set_filename(strings_.add(f.file));
    return it->second;
  }

  uint64_t mapping(const Frame& f) {
    auto [it, added] = mappings_.try_emplace(f.module, static_cast<uint64_t>(mappings_.size() + 1));
    auto& range = ranges_[it->second];
    const uint64_t bias = f.address - f.module_offset;
    if (added) {
      auto* m = profile_.add_mapping();
      m->set_id(it->second);
      m->set_filename(strings_.add(f.module));
      m->set_has_functions(true);
      m->set_has_filenames(true);
      m->set_has_line_numbers(true);
      m->set_has_inline_frames(true);
      range = {f.address, f.address + 1, bias};
    } else {
      range.start = std::min(range.start, f.address);
      range.limit = std::max(range.limit, f.address + 1);
    }
    // The report knows only the addresses it saw; the mapping spans those.
    auto* m = profile_.mutable_mapping(static_cast<int>(it->second - 1));
    m->set_memory_start(range.start);
    m->set_memory_limit(range.limit);
    m->set_file_offset(range.start - range.bias);
    return it->second;
  }

  struct Range {
    uint64_t start = 0, limit = 0, bias = 0;
  };
  pp::Profile& profile_;
  StringTable strings_;
  std::unordered_map<std::string, uint64_t> locations_, functions_, mappings_;
  std::vector<uint64_t> location_of_frame_;  // by FrameIndex, 0 = not yet (location ids start at 1)
  std::unordered_map<std::string, uint64_t> locations_by_frames_;  // key: the FrameIndex bytes
  std::unordered_map<uint64_t, Range> ranges_;
  std::vector<FrameIndex> group_;  // locations()'s run of frames, kept for its capacity
};

// What a profile's samples are: their types (name, unit) in order, the one shown first,
// and the period (bytes between samples: 1 where every allocation was recorded).
struct ProfileShape {
  std::vector<std::pair<const char*, const char*>> sample_types;
  const char* default_type;
};

int64_t period_bytes(const Report& report) {
  return report.sampling && report.sampling->rate_bytes ? static_cast<int64_t>(report.sampling->rate_bytes) : 1;
}

// Writes the profile, its samples coming from `each_sample(emit)`, which calls
// emit(stack figures' stack, stage, values in the shape's order) for each.
template <class EachSample>
std::string write_profile(const Report& report, const ProfileShape& shape, EachSample each_sample) {
  // Everything but the samples: the sample types, and the mappings, locations, functions
  // and strings the samples name (thousands, where the samples are hundreds of thousands of
  // stacks of ~66 locations each).
  pp::Profile profile;
  ProfileBuilder builder(profile);
  auto& strings = builder.strings();
  for (const auto& [type, unit] : shape.sample_types) {
    auto* st = profile.add_sample_type();
    st->set_type(strings.add(type));
    st->set_unit(strings.add(unit));
  }
  profile.mutable_period_type()->set_type(strings.add("space"));
  profile.mutable_period_type()->set_unit(strings.add("bytes"));
  profile.set_period(period_bytes(report));
  profile.set_default_sample_type(strings.add(shape.default_type));
  profile.set_duration_nanos(static_cast<int64_t>(report.duration_s * 1e9));
  std::string command;
  for (const auto& word : report.command) command += (command.empty() ? "" : " ") + word;
  profile.add_comment(strings.add("memstage: " + command));
  profile.add_comment(strings.add("allocator: " + report.allocator + ", mode: " + report.mode));
  const int64_t stage_key = strings.add("stage");

  // The samples go straight to the gzip stream, one reused Sample message at a time, rather
  // than into the Profile: as messages they would be the whole export's memory (a Python
  // program importing torch: 4.6e7 location ids, ~1 GB). A message serializes as its fields
  // in field-number order, so sample_type (1), then the samples (2), then the Profile
  // without its sample_type (mapping 3, ...) are the bytes Profile::SerializeToString
  // would give.
  namespace io = google::protobuf::io;
  using google::protobuf::internal::WireFormatLite;
  std::string gz;
  GzipSink gzip(gz);
  {
    io::CopyingOutputStreamAdaptor zipped(&gzip);
    {
      io::CodedOutputStream out(&zipped);
      const auto write_field = [&out](int field_number, const google::protobuf::MessageLite& message) {
        out.WriteTag(WireFormatLite::MakeTag(field_number, WireFormatLite::WIRETYPE_LENGTH_DELIMITED));
        out.WriteVarint32(static_cast<uint32_t>(message.ByteSizeLong()));
        message.SerializeWithCachedSizes(&out);
      };
      for (const auto& st : profile.sample_type()) write_field(pp::Profile::kSampleTypeFieldNumber, st);
      pp::Sample sample;
      each_sample([&](StackIndex stack, int stage, std::initializer_list<int64_t> values) {
        sample.Clear();  // keeps its fields' memory for the next stack
        // A stack in several stages is several samples, each with the stack's locations.
        builder.locations(report, report.stacks[stack], *sample.mutable_location_id());
        for (const int64_t v : values) sample.add_value(v);
        auto* label = sample.add_label();
        label->set_key(stage_key);
        const bool in_stage = stage >= 0 && static_cast<size_t>(stage) < report.stages.size();
        label->set_str(strings.add(in_stage ? report.stages[stage].path : "(none)"));
        write_field(pp::Profile::kSampleFieldNumber, sample);
      });
      profile.clear_sample_type();
      if (!profile.SerializeToCodedStream(&out) || out.HadError()) {
        throw std::runtime_error("render_pprof: serialization failed");
      }
    }  // the coded stream hands what it buffered to `zipped` here
    if (!zipped.Flush()) throw std::runtime_error("render_pprof: gzip failed");
  }
  gzip.finish();
  return gz;
}

// What each (stack, stage) holds now, from the leaks: allocated and not freed so far.
struct Held {
  uint64_t bytes = 0, blocks = 0;
};
uint64_t stack_stage_key(StackIndex stack, int stage) {
  return (uint64_t{stack} << 32) | static_cast<uint32_t>(stage);
}

}  // namespace

std::string render_pprof(const Report& report) {
  const ProfileShape shape{
      {{"inuse_space", "bytes"}, {"alloc_space", "bytes"}, {"alloc_objects", "count"}, {"leaked_space", "bytes"}},
      "inuse_space"};
  return write_profile(report, shape, [&](const auto& emit) {
    for (const auto& f : report.stack_figures) {
      if (f.stack >= report.stacks.size()) continue;
      if (f.live_at_peak_bytes == 0 && f.bytes_allocated == 0 && f.allocations == 0 && f.leaked_bytes == 0) continue;
      emit(f.stack, f.stage,
           {static_cast<int64_t>(f.live_at_peak_bytes), static_cast<int64_t>(f.bytes_allocated),
            static_cast<int64_t>(f.allocations), static_cast<int64_t>(f.leaked_bytes)});
    }
  });
}

std::string render_pprof_heap(const Report& report, const std::string& default_type) {
  if (default_type != "inuse_space" && default_type != "alloc_space") {
    throw std::invalid_argument("render_pprof_heap: default type " + default_type);
  }
  std::unordered_map<uint64_t, Held> held;
  for (const auto& leak : report.leaks) {
    Held& h = held[stack_stage_key(leak.stack, leak.stage)];
    h.bytes += leak.bytes;
    h.blocks += leak.blocks;
  }
  const ProfileShape shape{
      {{"alloc_objects", "count"}, {"alloc_space", "bytes"}, {"inuse_objects", "count"}, {"inuse_space", "bytes"}},
      default_type == "inuse_space" ? "inuse_space" : "alloc_space"};
  return write_profile(report, shape, [&](const auto& emit) {
    const auto emit_row = [&](StackIndex stack, int stage, uint64_t allocations, uint64_t bytes, Held now) {
      if (stack >= report.stacks.size() || (allocations == 0 && bytes == 0 && now.bytes == 0)) return;
      emit(stack, stage, {static_cast<int64_t>(allocations), static_cast<int64_t>(bytes),
                          static_cast<int64_t>(now.blocks), static_cast<int64_t>(now.bytes)});
    };
    for (const auto& f : report.stack_figures) {
      const auto it = held.find(stack_stage_key(f.stack, f.stage));
      emit_row(f.stack, f.stage, f.allocations, f.bytes_allocated, it == held.end() ? Held{} : it->second);
      if (it != held.end()) held.erase(it);
    }
    for (const auto& leak : report.leaks) {  // held by a (stack, stage) with no figures
      const auto it = held.find(stack_stage_key(leak.stack, leak.stage));
      if (it == held.end()) continue;
      emit_row(leak.stack, leak.stage, 0, 0, it->second);
      held.erase(it);
    }
  });
}

}  // namespace memstage::reports
