// A state dict from torch.save's data.pkl, without running any code (io/torch_pickle.h). The
// opcodes are Python's (Lib/pickle.py, pickletools): a stack machine with a memo.
#include "torch_pickle.h"

#include <cstring>
#include <map>
#include <variant>

#include "nanoformer/core/error.h"

namespace nf::io {
namespace {

struct Node;
using Ref = std::shared_ptr<Node>;

struct Global {
  std::string module, name;
};
struct Storage {  // a persistent id resolved: torch's storage
  std::string key;
  DType dtype = DType::f32;
  int64_t numel = 0;
};
struct List {
  std::vector<Ref> items;
};
struct Tuple {
  std::vector<Ref> items;
};
struct Dict {
  std::vector<std::pair<Ref, Ref>> items;
};
struct None {};
struct Mark {};
// A pickled value; containers are shared so that one mutated on the stack is mutated in the memo
// (the Machine empties them all when it ends: a pickle may nest them a million deep, or put a list
// inside itself, which shared ownership alone would destroy recursively or never free).
struct Node {
  std::variant<None, Mark, bool, int64_t, double, std::string, Global, Storage, List, Tuple, Dict, PickledTensor, DType> v;
};

Ref make(auto value) { return std::make_shared<Node>(Node{std::move(value)}); }

const std::map<std::string, DType>& storage_types() {
  static const std::map<std::string, DType> types = {
      {"FloatStorage", DType::f32}, {"DoubleStorage", DType::f64}, {"HalfStorage", DType::f16},
      {"BFloat16Storage", DType::bf16}, {"IntStorage", DType::i32}, {"LongStorage", DType::i64},
      {"BoolStorage", DType::boolean}};
  return types;
}

class Machine {
 public:
  Machine(const unsigned char* data, size_t size, const std::string& source) : data_(data), size_(size), source_(source) {}
  ~Machine() {
    for (const Ref& c : containers_) {
      if (auto* l = std::get_if<List>(&c->v)) l->items.clear();
      if (auto* t = std::get_if<Tuple>(&c->v)) t->items.clear();
      if (auto* d = std::get_if<Dict>(&c->v)) d->items.clear();
    }
  }
  Machine(const Machine&) = delete;
  Machine& operator=(const Machine&) = delete;

  Ref run() {
    for (;;) {
      const size_t at = pos_;
      const uint8_t op = byte();
      switch (op) {
        case 0x80: byte(); break;              // PROTO n
        case 0x95: bytes(8); break;            // FRAME size
        case '.': return pop(at);              // STOP
        case '(': stack_.push_back(make(Mark{})); break;
        case 'N': stack_.push_back(make(None{})); break;
        case 0x88: stack_.push_back(make(true)); break;   // NEWTRUE
        case 0x89: stack_.push_back(make(false)); break;  // NEWFALSE
        case 'K': stack_.push_back(make(static_cast<int64_t>(byte()))); break;                // BININT1
        case 'M': stack_.push_back(make(static_cast<int64_t>(uint_le(2)))); break;            // BININT2
        case 'J': stack_.push_back(make(static_cast<int64_t>(static_cast<int32_t>(uint_le(4))))); break;  // BININT
        case 0x8a: stack_.push_back(make(long1(at))); break;                                  // LONG1
        case 'G': stack_.push_back(make(binfloat())); break;                                  // BINFLOAT
        case 'X': stack_.push_back(make(text(uint_le(4), at))); break;   // BINUNICODE
        case 0x8c: stack_.push_back(make(text(byte(), at))); break;      // SHORT_BINUNICODE
        case 0x8d: stack_.push_back(make(text(uint_le(8), at))); break;  // BINUNICODE8
        case 'U': stack_.push_back(make(text(byte(), at))); break;       // SHORT_BINSTRING
        case 'T': stack_.push_back(make(text(uint_le(4), at))); break;   // BINSTRING
        case '}': stack_.push_back(container(Dict{})); break;
        case ']': stack_.push_back(container(List{})); break;
        case ')': stack_.push_back(container(Tuple{})); break;
        case 't': stack_.push_back(container(Tuple{since_mark(at)})); break;
        case 0x85: stack_.push_back(container(Tuple{last(1, at)})); break;  // TUPLE1
        case 0x86: stack_.push_back(container(Tuple{last(2, at)})); break;  // TUPLE2
        case 0x87: stack_.push_back(container(Tuple{last(3, at)})); break;  // TUPLE3
        case 'q': memo_[byte()] = top(at); break;                      // BINPUT
        case 'r': memo_[uint_le(4)] = top(at); break;                  // LONG_BINPUT
        case 0x94: memo_[memo_.size()] = top(at); break;               // MEMOIZE
        case 'h': stack_.push_back(get(byte(), at)); break;            // BINGET
        case 'j': stack_.push_back(get(uint_le(4), at)); break;        // LONG_BINGET
        case 'c': {                                                    // GLOBAL "module\nname\n"
          std::string module = line(at), name = line(at);
          stack_.push_back(global(std::move(module), std::move(name), at));
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          const Ref name = pop(at), module = pop(at);
          stack_.push_back(global(as<std::string>(module, "a module name", at), as<std::string>(name, "a global's name", at), at));
          break;
        }
        case 'a': {  // APPEND
          const Ref value = pop(at);
          as<List>(top(at), "a list", at).items.push_back(value);
          break;
        }
        case 'e': {  // APPENDS
          std::vector<Ref> values = since_mark(at);
          auto& list = as<List>(top(at), "a list", at).items;
          list.insert(list.end(), values.begin(), values.end());
          break;
        }
        case 's': {  // SETITEM
          const Ref value = pop(at), key = pop(at);
          as<Dict>(top(at), "a dict", at).items.emplace_back(key, value);
          break;
        }
        case 'u': {  // SETITEMS
          const std::vector<Ref> values = since_mark(at);
          NF_CHECK(values.size() % 2 == 0, source_, ": pickle: SETITEMS at byte ", at, " has an odd number of items");
          auto& dict = as<Dict>(top(at), "a dict", at).items;
          for (size_t i = 0; i < values.size(); i += 2) dict.emplace_back(values[i], values[i + 1]);
          break;
        }
        case 'Q': stack_.push_back(persistent(pop(at), at)); break;  // BINPERSID
        case 'R': {                                                  // REDUCE
          const Ref args = pop(at), callable = pop(at);
          stack_.push_back(reduce(callable, as<Tuple>(args, "an argument tuple", at).items, at));
          break;
        }
        case 0x81: {  // NEWOBJ cls args: only OrderedDict's
          const Ref args = pop(at), cls = pop(at);
          stack_.push_back(reduce(cls, as<Tuple>(args, "an argument tuple", at).items, at));
          break;
        }
        case 'b': pop(at); break;  // BUILD: an object's state (an OrderedDict's _metadata): not needed
        default:
          NF_FAIL(source_, ": pickle: opcode 0x", hex(op), " at byte ", at,
                  " is not one a state dict of tensors uses (torch.save of a dict of tensors)");
      }
    }
  }

 private:
  Ref container(auto value) {
    containers_.push_back(make(std::move(value)));
    return containers_.back();
  }
  static std::string hex(uint8_t b) {
    const char* digits = "0123456789abcdef";
    return {digits[b >> 4], digits[b & 15]};
  }
  const unsigned char* bytes(uint64_t n) {
    NF_CHECK(n <= size_ - pos_, source_, ": pickle: truncated at byte ", pos_, " (", n, " more bytes expected, ",
             size_ - pos_, " left)");
    const unsigned char* p = data_ + pos_;
    pos_ += n;
    return p;
  }
  uint8_t byte() { return *bytes(1); }
  uint64_t uint_le(int n) {
    const unsigned char* p = bytes(static_cast<uint64_t>(n));
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
    return v;
  }
  int64_t long1(size_t at) {
    const uint8_t n = byte();
    NF_CHECK(n <= 8, source_, ": pickle: an integer of ", int{n}, " bytes at byte ", at, " is too large");
    const unsigned char* p = bytes(n);
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
    if (n > 0 && n < 8 && (p[n - 1] & 0x80)) v |= ~uint64_t{0} << (8 * n);  // two's complement, sign-extended
    return static_cast<int64_t>(v);
  }
  double binfloat() {  // big-endian IEEE double
    const unsigned char* p = bytes(8);
    uint64_t bits = 0;
    for (int i = 0; i < 8; ++i) bits = bits << 8 | p[i];
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  }
  std::string text(uint64_t n, size_t) { return std::string(reinterpret_cast<const char*>(bytes(n)), n); }
  std::string line(size_t at) {
    const void* end = std::memchr(data_ + pos_, '\n', size_ - pos_);
    NF_CHECK(end != nullptr, source_, ": pickle: GLOBAL at byte ", at, " has no end of line");
    const auto n = static_cast<uint64_t>(static_cast<const unsigned char*>(end) - (data_ + pos_));
    std::string s = text(n, at);
    ++pos_;
    return s;
  }
  Ref pop(size_t at) {
    NF_CHECK(!stack_.empty() && !std::holds_alternative<Mark>(stack_.back()->v), source_, ": pickle: the stack is empty at byte ", at);
    Ref r = stack_.back();
    stack_.pop_back();
    return r;
  }
  Ref top(size_t at) {
    NF_CHECK(!stack_.empty(), source_, ": pickle: the stack is empty at byte ", at);
    return stack_.back();
  }
  std::vector<Ref> last(size_t n, size_t at) {
    std::vector<Ref> items(n);
    for (size_t i = n; i-- > 0;) items[i] = pop(at);
    return items;
  }
  std::vector<Ref> since_mark(size_t at) {
    size_t mark = stack_.size();
    while (mark > 0 && !std::holds_alternative<Mark>(stack_[mark - 1]->v)) --mark;
    NF_CHECK(mark > 0, source_, ": pickle: no mark before byte ", at);
    std::vector<Ref> items(stack_.begin() + static_cast<ptrdiff_t>(mark), stack_.end());
    stack_.resize(mark - 1);
    return items;
  }
  Ref get(uint64_t index, size_t at) {
    const auto it = memo_.find(index);
    NF_CHECK(it != memo_.end(), source_, ": pickle: memo entry ", index, " read at byte ", at, " was never set");
    return it->second;
  }
  template <class T>
  T& as(const Ref& r, const char* what, size_t at) {
    T* p = std::get_if<T>(&r->v);
    NF_CHECK(p != nullptr, source_, ": pickle: expected ", what, " at byte ", at);
    return *p;
  }
  Ref global(std::string module, std::string name, size_t at) {
    if (module == "torch" && storage_types().count(name)) return make(storage_types().at(name));
    const bool known = (module == "collections" && name == "OrderedDict") ||
                       (module == "torch._utils" && (name == "_rebuild_tensor_v2" || name == "_rebuild_parameter"));
    NF_CHECK(known, source_, ": pickle: the global ", module, ".", name, " at byte ", at,
             " is not part of a state dict of tensors (only tensors, dicts and their names are read, no code is run)");
    return make(Global{std::move(module), std::move(name)});
  }
  Ref persistent(const Ref& id, size_t at) {  // ('storage', type, key, location, numel)
    const auto& t = as<Tuple>(id, "a persistent id tuple", at).items;
    NF_CHECK(t.size() == 5 && std::holds_alternative<std::string>(t[0]->v) && std::get<std::string>(t[0]->v) == "storage",
             source_, ": pickle: the persistent id at byte ", at, " is not torch's ('storage', type, key, location, numel)");
    const int64_t numel = as<int64_t>(t[4], "a storage's element count", at);
    NF_CHECK(numel >= 0, source_, ": pickle: a storage of ", numel, " elements at byte ", at);
    return make(Storage{as<std::string>(t[2], "a storage key", at), as<DType>(t[1], "a storage type (torch.<Type>Storage)", at), numel});
  }
  std::vector<int64_t> integers(const Ref& r, const char* what, size_t at) {
    std::vector<int64_t> out;
    for (const Ref& item : as<Tuple>(r, what, at).items) out.push_back(as<int64_t>(item, what, at));
    return out;
  }
  Ref reduce(const Ref& callable, const std::vector<Ref>& args, size_t at) {
    const Global& g = as<Global>(callable, "a callable", at);
    if (g.name == "OrderedDict") return container(Dict{});
    if (g.name == "_rebuild_parameter") {  // (tensor, requires_grad, backward_hooks)
      NF_CHECK(!args.empty() && std::holds_alternative<PickledTensor>(args[0]->v), source_, ": pickle: _rebuild_parameter at byte ",
               at, " without a tensor");
      return args[0];
    }
    // _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
    NF_CHECK(args.size() >= 4, source_, ": pickle: _rebuild_tensor_v2 at byte ", at, " has ", args.size(), " arguments");
    const Storage& s = as<Storage>(args[0], "a storage", at);
    PickledTensor t{.storage_key = s.key, .dtype = s.dtype, .storage_numel = s.numel,
                    .offset = as<int64_t>(args[1], "a storage offset", at), .shape = integers(args[2], "a size tuple", at),
                    .strides = integers(args[3], "a stride tuple", at)};
    NF_CHECK(t.shape.size() == t.strides.size(), source_, ": pickle: a tensor at byte ", at, " has ", t.shape.size(),
             " sizes but ", t.strides.size(), " strides");
    return make(std::move(t));
  }

  const unsigned char* data_;
  size_t size_;
  const std::string& source_;
  size_t pos_ = 0;
  std::vector<Ref> stack_;
  std::map<uint64_t, Ref> memo_;
  std::vector<Ref> containers_;  // every list, tuple and dict made, emptied at the end
};

}  // namespace

std::vector<std::pair<std::string, PickledTensor>> read_pickled_state_dict(const unsigned char* data, size_t size,
                                                                            const std::string& source) {
  Machine machine(data, size, source);  // its containers live until the state dict is copied out
  const Ref root = machine.run();
  const Dict* dict = std::get_if<Dict>(&root->v);
  NF_CHECK(dict != nullptr, source, ": pickle: the file holds no dict of tensors (a state dict)");
  std::vector<std::pair<std::string, PickledTensor>> out;
  for (const auto& [key, value] : dict->items) {
    const std::string* name = std::get_if<std::string>(&key->v);
    NF_CHECK(name != nullptr, source, ": pickle: a state dict key is not a string");
    const PickledTensor* t = std::get_if<PickledTensor>(&value->v);
    NF_CHECK(t != nullptr, source, ": pickle: '", *name, "' is not a tensor (a state dict of tensors is read; a ",
             "checkpoint that nests the model's state dict in a larger dict needs it saved alone)");
    out.emplace_back(*name, *t);
  }
  return out;
}

}  // namespace nf::io
