// A zip archive's stored members (io/zip_archive.h). Layout (APPNOTE.TXT): local headers and data,
// then the central directory (one 46-byte record + name + extra + comment per member), then the
// end-of-central-directory record (22 bytes + comment), preceded for ZIP64 by its locator (20
// bytes) pointing at the ZIP64 end record (56 bytes), which holds the 64-bit counts and offsets.
#include "zip_archive.h"

#include <cstring>
#include <set>

#include "nanoformer/core/error.h"

namespace nf::io {
namespace {

constexpr uint32_t kLocalHeader = 0x04034b50, kCentralHeader = 0x02014b50, kEnd = 0x06054b50, kEnd64 = 0x06064b50,
                   kEnd64Locator = 0x07064b50;

// Little-endian reads within [0, size): a read past the end is an error naming the file.
struct Reader {
  const unsigned char* data;
  size_t size;
  const std::string& path;
  void need(uint64_t at, uint64_t n, const char* what) const {
    NF_CHECK(at <= size && n <= size - at, "zip: ", path, ": truncated: the ", what, " at byte ", at, " runs past the end (",
             size, " bytes)");
  }
  template <class T>
  T get(uint64_t at, const char* what) const {
    need(at, sizeof(T), what);
    T v = 0;
    for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(static_cast<T>(data[at + i]) << (8 * i));
    return v;
  }
};

}  // namespace

std::vector<ZipEntry> read_stored_zip(const unsigned char* data, size_t size, const std::string& path) {
  const Reader r{data, size, path};
  NF_CHECK(size >= 22, "zip: ", path, ": ", size, " bytes is too small for a zip archive");
  // the end record: the last signature within its 22 bytes + a comment of up to 65535
  uint64_t end = size - 22;
  const uint64_t lowest = size > 22 + 65535 ? size - 22 - 65535 : 0;
  while (r.get<uint32_t>(end, "end record") != kEnd) {
    NF_CHECK(end > lowest, "zip: ", path, ": not a zip archive (no end of central directory record)");
    --end;
  }
  uint64_t count = r.get<uint16_t>(end + 10, "end record"), directory_size = r.get<uint32_t>(end + 12, "end record"),
           directory = r.get<uint32_t>(end + 16, "end record");
  if (end >= 20 && r.get<uint32_t>(end - 20, "ZIP64 locator") == kEnd64Locator) {
    const uint64_t end64 = r.get<uint64_t>(end - 20 + 8, "ZIP64 locator");
    NF_CHECK(r.get<uint32_t>(end64, "ZIP64 end record") == kEnd64, "zip: ", path, ": the ZIP64 locator points at byte ",
             end64, ", which holds no ZIP64 end record");
    count = r.get<uint64_t>(end64 + 32, "ZIP64 end record");
    directory_size = r.get<uint64_t>(end64 + 40, "ZIP64 end record");
    directory = r.get<uint64_t>(end64 + 48, "ZIP64 end record");
  }
  r.need(directory, directory_size, "central directory");
  NF_CHECK(count <= directory_size / 46, "zip: ", path, ": ", count, " members cannot fit a central directory of ",
           directory_size, " bytes");
  std::vector<ZipEntry> entries;
  std::set<std::string> names;
  uint64_t at = directory;
  for (uint64_t i = 0; i < count; ++i) {
    NF_CHECK(r.get<uint32_t>(at, "central directory") == kCentralHeader, "zip: ", path, ": central directory record ", i,
             " at byte ", at, " has no signature");
    const uint16_t flags = r.get<uint16_t>(at + 8, "central directory"), method = r.get<uint16_t>(at + 10, "central directory");
    uint64_t compressed = r.get<uint32_t>(at + 20, "central directory"), uncompressed = r.get<uint32_t>(at + 24, "central directory");
    const uint16_t name_length = r.get<uint16_t>(at + 28, "central directory"),
                   extra_length = r.get<uint16_t>(at + 30, "central directory"),
                   comment_length = r.get<uint16_t>(at + 32, "central directory");
    uint64_t local = r.get<uint32_t>(at + 42, "central directory");
    r.need(at + 46, uint64_t{name_length} + extra_length + comment_length, "central directory record");
    ZipEntry e{.name = std::string(reinterpret_cast<const char*>(data + at + 46), name_length), .offset = 0, .size = 0};
    // ZIP64 extended information: the 64-bit values of the fields set to 0xffffffff, in this order
    for (uint64_t x = at + 46 + name_length; x + 4 <= at + 46 + name_length + extra_length;) {
      const uint16_t id = r.get<uint16_t>(x, "extra field"), length = r.get<uint16_t>(x + 2, "extra field");
      uint64_t field = x + 4;
      NF_CHECK(field + length <= at + 46 + name_length + extra_length, "zip: ", path, ": member '", e.name,
               "': an extra field runs past its record");
      if (id == 0x0001) {
        for (uint64_t* value : {&uncompressed, &compressed, &local})
          if (*value == 0xffffffffu) {
            NF_CHECK(field + 8 <= x + 4 + length, "zip: ", path, ": member '", e.name, "': its ZIP64 field is too short");
            *value = r.get<uint64_t>(field, "extra field");
            field += 8;
          }
      }
      x += 4 + uint64_t{length};
    }
    NF_CHECK((flags & 1) == 0, "zip: ", path, ": member '", e.name, "' is encrypted");
    NF_CHECK(method == 0 && compressed == uncompressed, "zip: ", path, ": member '", e.name, "' is compressed (method ",
             method, "): only stored members are read, as torch.save writes them");
    NF_CHECK(names.insert(e.name).second, "zip: ", path, ": member '", e.name, "' is named twice");
    NF_CHECK(r.get<uint32_t>(local, "local header") == kLocalHeader, "zip: ", path, ": member '", e.name,
             "': no local header at byte ", local);
    e.offset = local + 30 + r.get<uint16_t>(local + 26, "local header") + r.get<uint16_t>(local + 28, "local header");
    e.size = uncompressed;
    NF_CHECK(e.offset <= directory && e.size <= directory - e.offset, "zip: ", path, ": member '", e.name, "' (",
             e.size, " bytes at byte ", e.offset, ") runs into the central directory or past the file");
    entries.push_back(std::move(e));
    at += 46 + uint64_t{name_length} + extra_length + comment_length;
  }
  return entries;
}

}  // namespace nf::io
