#pragma once
// Errors are exceptions whose message names the op, tensor or file and the shapes or values at
// fault, e.g. "matmul: inner dimensions differ: a (2, 3) and b (4, 5)".
#include <sstream>
#include <stdexcept>
#include <string>

namespace nf {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// A tensor's memory could not be had: its message names the bytes; a loader adds its file.
class OutOfMemory : public Error {
 public:
  using Error::Error;
};

namespace detail {
template <class... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

}  // namespace nf

// NF_CHECK(cond, parts...): throws nf::Error with the parts streamed together when cond is false.
#define NF_CHECK(cond, ...)                                  \
  do {                                                       \
    if (!(cond)) throw ::nf::Error(::nf::detail::concat(__VA_ARGS__)); \
  } while (0)

#define NF_FAIL(...) throw ::nf::Error(::nf::detail::concat(__VA_ARGS__))
