// Test helpers: temporary files that remove themselves, and the real data samples (tests/data).
#pragma once

#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace trainer_test {

inline std::string data_dir() { return TRAINER_DATA_DIR; }

// Fails the test with a clear message when the shared data set is missing.
inline std::string data_file(const std::string& name) {
  const std::string path = data_dir() + "/" + name;
  if (!std::filesystem::exists(path)) {
    throw std::runtime_error("missing data file " + path + " (tests/data/make_samples.sh remakes the samples)");
  }
  return path;
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "trainer-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string file(const std::string& name, const std::string& contents) const {
    const std::string p = path_ + "/" + name;
    std::ofstream(p, std::ios::binary) << contents;
    return p;
  }
  std::string gz_file(const std::string& name, const std::string& contents) const {
    const std::string p = path_ + "/" + name;
    gzFile f = gzopen(p.c_str(), "wb");
    gzwrite(f, contents.data(), static_cast<unsigned>(contents.size()));
    gzclose(f);
    return p;
  }
  std::string path(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace trainer_test
