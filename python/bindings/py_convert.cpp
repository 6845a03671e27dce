#include "python/bindings/py_convert.h"

#include <limits>

#include "core/config/json_reader.h"
#include "core/common/error.h"

namespace triescope::py {

std::string describe_array(const pyb::array& a) {
  std::string shape = "(";
  for (pyb::ssize_t i = 0; i < a.ndim(); ++i) shape += (i ? ", " : "") + std::to_string(a.shape(i));
  if (a.ndim() == 1) shape += ",";
  shape += ")";
  return pyb::str(a.dtype()).cast<std::string>() + " array of shape " + shape;
}

namespace {

std::string type_name(pyb::handle obj) { return pyb::str(pyb::type::handle_of(obj).attr("__name__")).cast<std::string>(); }

bool is_int(pyb::handle obj) {
  return (pyb::isinstance<pyb::int_>(obj) && !pyb::isinstance<pyb::bool_>(obj)) ||
         (pyb::hasattr(obj, "dtype") && pyb::hasattr(obj, "ndim") && obj.attr("ndim").cast<int>() == 0 &&
          std::string("iu").find(obj.attr("dtype").attr("kind").cast<std::string>()) != std::string::npos);
}

// A Python or numpy integer as int64; beyond it an OverflowError naming it
// (pybind's cast gives a bare RuntimeError).
int64_t int64_of(pyb::handle item, const std::string& name) {
  const pyb::int_ i = pyb::reinterpret_borrow<pyb::object>(item);  // int(item): numpy scalars too
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (overflow != 0) {
    PyErr_SetString(PyExc_OverflowError, (name + ": " + pyb::str(item).cast<std::string>() + " does not fit in 64 bits").c_str());
    throw pyb::error_already_set();
  }
  if (v == -1 && PyErr_Occurred()) throw pyb::error_already_set();
  return v;
}

// An integer array of `ndim` dimensions as int64 values: other entries are a
// TypeError, another shape an Error, a uint64 entry past INT64_MAX an
// OverflowError naming it (a forced cast would wrap it: 2^64 - 1 became -1).
pyb::array_t<int64_t, pyb::array::c_style | pyb::array::forcecast> int64_array(const pyb::array& a, pyb::ssize_t ndim,
                                                                               const std::string& name) {
  const char kind = a.dtype().kind();
  if (kind != 'i' && kind != 'u') throw pyb::type_error(name + ": expected integers, got a " + describe_array(a));
  if (a.ndim() != ndim) throw Error(name + ": expected a " + std::to_string(ndim) + "-D array, got a " + describe_array(a));
  if (a.dtype().kind() == 'u' && a.dtype().itemsize() == 8) {
    const auto u = pyb::array_t<uint64_t, pyb::array::c_style | pyb::array::forcecast>::ensure(a);
    for (pyb::ssize_t k = 0; k < u.size(); ++k)
      if (u.data()[k] > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        PyErr_SetString(PyExc_OverflowError, (name + ": entry " + std::to_string(k) + " = " + std::to_string(u.data()[k]) +
                                              " does not fit in 64 bits").c_str());
        throw pyb::error_already_set();
      }
  }
  return pyb::array_t<int64_t, pyb::array::c_style | pyb::array::forcecast>::ensure(a);
}

}  // namespace

int32_t int32_checked(int64_t v, const std::string& name) {
  TS_CHECK(v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max(), name << ": " << v << " does not fit in 32 bits");
  return static_cast<int32_t>(v);
}

pyb::object numpy_of(pyb::handle obj) {
  const std::string mod = pyb::str(pyb::type::handle_of(obj).attr("__module__")).cast<std::string>();
  if (mod.rfind("torch", 0) == 0 && pyb::hasattr(obj, "detach")) return obj.attr("detach")().attr("cpu")().attr("numpy")();
  return pyb::reinterpret_borrow<pyb::object>(obj);
}

namespace {
// `depth`: containers around obj. Deeper than a trace's reader takes
// (kJsonMaxDepth) is refused here, which also ends a circular object.
nlohmann::json to_json_nested(pyb::handle obj, const std::string& name, int depth) {
  if (depth >= kJsonMaxDepth)
    throw Error(name.substr(0, 120) + (name.size() > 120 ? "..." : "") + ": nested deeper than " + std::to_string(kJsonMaxDepth) +
                " levels (a circular object, or deeper than a trace reader takes)");
  if (obj.is_none()) return nullptr;
  if (pyb::isinstance<pyb::bool_>(obj)) return obj.cast<bool>();
  if (is_int(obj)) return int64_of(obj, name);
  if (pyb::isinstance<pyb::float_>(obj)) return obj.cast<double>();
  if (pyb::isinstance<pyb::str>(obj)) return obj.cast<std::string>();
  if (pyb::isinstance<pyb::dict>(obj)) {
    nlohmann::json j = nlohmann::json::object();
    for (auto item : obj.cast<pyb::dict>()) {
      if (!pyb::isinstance<pyb::str>(item.first)) throw pyb::type_error(name + ": keys must be strings, got " + type_name(item.first));
      const std::string key = item.first.cast<std::string>();
      j[key] = to_json_nested(item.second, name + "." + key, depth + 1);
    }
    return j;
  }
  if (pyb::isinstance<pyb::list>(obj) || pyb::isinstance<pyb::tuple>(obj)) {
    nlohmann::json j = nlohmann::json::array();
    size_t i = 0;
    for (auto item : obj) j.push_back(to_json_nested(item, name + "[" + std::to_string(i++) + "]", depth + 1));
    return j;
  }
  throw pyb::type_error(name + ": cannot store a " + type_name(obj) + " in a trace (use dict, list, str, int, float, bool, None)");
}
}  // namespace

nlohmann::json to_json(pyb::handle obj, const std::string& name) { return to_json_nested(obj, name, 0); }

pyb::object from_json(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return pyb::none();
    case nlohmann::json::value_t::boolean: return pyb::bool_(j.get<bool>());
    case nlohmann::json::value_t::number_integer: return pyb::int_(j.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: return pyb::int_(j.get<uint64_t>());
    case nlohmann::json::value_t::number_float: return pyb::float_(j.get<double>());
    case nlohmann::json::value_t::string: return pyb::str(j.get<std::string>());
    case nlohmann::json::value_t::array: {
      pyb::list l;
      for (const auto& e : j) l.append(from_json(e));
      return l;
    }
    case nlohmann::json::value_t::object: {
      pyb::dict d;
      for (const auto& [k, v] : j.items()) d[pyb::str(k)] = from_json(v);
      return d;
    }
    default: return pyb::none();
  }
}

std::vector<int64_t> int_vector(pyb::handle obj_in, const std::string& name) {
  pyb::object obj = numpy_of(obj_in);
  std::vector<int64_t> out;
  if (pyb::isinstance<pyb::array>(obj)) {
    auto c = int64_array(obj.cast<pyb::array>(), 1, name);
    out.assign(c.data(), c.data() + c.size());
    return out;
  }
  if (pyb::isinstance<pyb::str>(obj) || !pyb::isinstance<pyb::sequence>(obj))
    throw pyb::type_error(name + ": expected a sequence of integers, got " + type_name(obj));
  size_t i = 0;
  for (auto item : obj) {
    if (!is_int(item))
      throw pyb::type_error(name + "[" + std::to_string(i) + "]: expected an integer, got " + type_name(item));
    out.push_back(int64_of(item, name + "[" + std::to_string(i) + "]"));
    ++i;
  }
  return out;
}

std::vector<int32_t> int32_vector(pyb::handle obj, const std::string& name) {
  const std::vector<int64_t> v = int_vector(obj, name);
  std::vector<int32_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = int32_checked(v[i], name + "[" + std::to_string(i) + "]");
  return out;
}

std::vector<std::vector<int64_t>> int_rows(pyb::handle obj_in, const std::string& name) {
  pyb::object obj = numpy_of(obj_in);
  std::vector<std::vector<int64_t>> rows;
  if (pyb::isinstance<pyb::array>(obj)) {
    auto c = int64_array(obj.cast<pyb::array>(), 2, name);
    const auto n = c.shape(0), m = c.shape(1);
    for (pyb::ssize_t r = 0; r < n; ++r) rows.emplace_back(c.data() + r * m, c.data() + (r + 1) * m);
    return rows;
  }
  if (pyb::isinstance<pyb::str>(obj) || !pyb::isinstance<pyb::sequence>(obj))
    throw pyb::type_error(name + ": expected a 2-D integer array or a list of integer lists, got " + type_name(obj));
  size_t i = 0;
  for (auto item : obj) rows.push_back(int_vector(item, name + "[" + std::to_string(i++) + "]"));
  return rows;
}

BitMask bit_mask(pyb::handle obj_in, const std::string& name) {
  pyb::object obj = numpy_of(obj_in);
  if (!pyb::isinstance<pyb::array>(obj))
    throw pyb::type_error(name + ": expected a 2-D numpy array or torch tensor of bool or uint8, got " + type_name(obj));
  auto a = obj.cast<pyb::array>();
  const char kind = a.dtype().kind();
  const bool is_bool = kind == 'b';
  const bool is_u8 = kind == 'u' && a.dtype().itemsize() == 1;
  if (!is_bool && !is_u8) throw pyb::type_error(name + ": expected bool or uint8 (0/1) entries, got a " + describe_array(a));
  if (a.ndim() != 2) throw Error(name + ": expected a 2-D array [queries x slots], got a " + describe_array(a));
  auto c = pyb::array_t<uint8_t, pyb::array::c_style | pyb::array::forcecast>::ensure(a);
  const auto rows = c.shape(0), cols = c.shape(1);
  TS_CHECK(cols < std::numeric_limits<int32_t>::max() && rows < std::numeric_limits<int32_t>::max(), name << ": too large");
  BitMask m(static_cast<int32_t>(rows), static_cast<int32_t>(cols));
  const uint8_t* p = c.data();
  for (pyb::ssize_t r = 0; r < rows; ++r)
    for (pyb::ssize_t col = 0; col < cols; ++col) {
      const uint8_t v = p[r * cols + col];
      TS_CHECK(v <= 1, name << "[" << r << ", " << col << "] = " << int{v} << ": entries must be 0 or 1");
      if (v) m.set(static_cast<int32_t>(r), static_cast<int32_t>(col));
    }
  return m;
}

pyb::array_t<float> float_rows_inplace(pyb::handle obj_in, const std::string& name) {
  pyb::object obj = numpy_of(obj_in);
  if (!pyb::isinstance<pyb::array>(obj))
    throw pyb::type_error(name + ": expected a 2-D float32 numpy array or CPU torch tensor, got " + type_name(obj));
  auto a = obj.cast<pyb::array>();
  if (a.dtype().kind() != 'f' || a.dtype().itemsize() != 4)
    throw pyb::type_error(name + ": expected float32 entries (masked in place), got a " + describe_array(a));
  if (a.ndim() != 2) throw Error(name + ": expected a 2-D array [rows x vocab], got a " + describe_array(a));
  if (!(a.flags() & pyb::array::c_style)) throw Error(name + ": must be C-contiguous (masked in place)");
  if (!a.writeable()) throw Error(name + ": must be writable (masked in place)");
  return pyb::array_t<float>(a);
}

pyb::array_t<float, pyb::array::c_style | pyb::array::forcecast> float_rows(pyb::handle obj_in, const std::string& name) {
  pyb::object obj = numpy_of(obj_in);
  if (!pyb::isinstance<pyb::array>(obj))
    throw pyb::type_error(name + ": expected a 2-D float numpy array or torch tensor, got " + type_name(obj));
  auto a = obj.cast<pyb::array>();
  if (a.dtype().kind() != 'f') throw pyb::type_error(name + ": expected floating-point entries, got a " + describe_array(a));
  if (a.ndim() != 2) throw Error(name + ": expected a 2-D array [rows x vocab], got a " + describe_array(a));
  return pyb::array_t<float, pyb::array::c_style | pyb::array::forcecast>::ensure(a);
}

}  // namespace triescope::py
