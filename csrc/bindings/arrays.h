// Arrays across the binding: every array argument arrives as an ArrayArg and is read with
// as_array(); every array result is made by NumpyBuffer. A bad argument (a non-numeric dtype,
// floats where integers are meant, a wrong number of dimensions, not an array at all) raises
// ValueError naming the argument, never nanobind's TypeError of an unmatched overload.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace diode::py {

namespace nb = nanobind;

// An array argument, converted in the function body by as_array (so that a failed conversion
// is a ValueError naming it). Stubs show it as numpy.typing.ArrayLike; bind it with
// nb::arg(name).none(), so that None too reaches as_array and its ValueError.
struct ArrayArg {
  nb::handle obj;
};

template <class T>
using CArray = nb::ndarray<const T, nb::c_contig, nb::device::cpu>;

inline std::string dtype_text(const nb::dlpack::dtype& t) {
  using Code = nb::dlpack::dtype_code;
  const char* kind = "unknown";
  switch (static_cast<Code>(t.code)) {
    case Code::Int:
      kind = "int";
      break;
    case Code::UInt:
      kind = "uint";
      break;
    case Code::Float:
      kind = "float";
      break;
    case Code::Bfloat:
      kind = "bfloat";
      break;
    case Code::Complex:
      kind = "complex";
      break;
    case Code::Bool:
      return "bool";
  }
  return std::string(kind) + std::to_string(t.bits);
}

// A C-contiguous CPU array of T with `ndim` dimensions (the last one of `columns` entries,
// where columns > 0) read from argument `name`. Arrays of another dtype or layout are copied:
// integers and booleans into any T, floats only into a floating T (integers are never truncated
// from floats).
template <class T>
CArray<T> as_array(ArrayArg arg, const char* name, size_t ndim, size_t columns = 0) {
  using Code = nb::dlpack::dtype_code;
  const std::string what = std::string(name) + " must be a " + std::to_string(ndim) + "-D " +
                           (std::is_floating_point_v<T> ? "float" : "integer") + " array";
  nb::ndarray<nb::ro> any;
  if (!nb::try_cast(arg.obj, any, false)) {
    std::string got = std::string("an object of type ") + nb::type_name(arg.obj.type()).c_str();
    try {  // an array of a dtype that DLPack cannot carry: name the dtype
      if (nb::hasattr(arg.obj, "dtype")) {
        const nb::object dtype = arg.obj.attr("dtype");
        got = std::string("dtype ") + nb::str(static_cast<nb::handle>(dtype)).c_str();
      }
    } catch (const nb::python_error&) {  // a dtype attribute that raises: keep the type
    }
    throw std::invalid_argument(what + ", got " + got);
  }
  const auto code = static_cast<Code>(any.dtype().code);
  const bool numeric = code == Code::Int || code == Code::UInt || code == Code::Bool ||
                       (std::is_floating_point_v<T> && code == Code::Float);
  if (!numeric) throw std::invalid_argument(what + ", got dtype " + dtype_text(any.dtype()));
  if (any.ndim() != ndim)
    throw std::invalid_argument(std::string(name) + " must have " + std::to_string(ndim) +
                                (ndim == 1 ? " dimension" : " dimensions") + ", got " +
                                std::to_string(any.ndim()));
  if (columns > 0 && ndim > 0 && any.shape(ndim - 1) != columns)
    throw std::invalid_argument(std::string(name) + " must have " + std::to_string(columns) +
                                " columns, got " + std::to_string(any.shape(ndim - 1)));
  if (any.device_type() != nb::device::cpu::value)
    throw std::invalid_argument(std::string(name) + " must be in CPU memory");
  CArray<T> out;
  if (!nb::try_cast(arg.obj, out, true))
    throw std::invalid_argument(what + ", cannot convert from dtype " + dtype_text(any.dtype()));
  return out;
}

// A freshly allocated buffer of n entries of T that the numpy arrays made from it share.
template <class T>
class NumpyBuffer {
 public:
  explicit NumpyBuffer(size_t n)
      : data_(new T[n + 1]),  // + 1: never a zero-size allocation
        owner_(data_, [](void* p) noexcept { delete[] static_cast<T*>(p); }),
        size_(n) {}

  std::span<T> span() const { return {data_, size_}; }

  // Entries [offset, offset + product(shape)) as a C-contiguous numpy array.
  nb::ndarray<nb::numpy, T> view(std::initializer_list<size_t> shape, size_t offset = 0) const {
    return nb::ndarray<nb::numpy, T>(data_ + offset, shape, owner_);
  }

 private:
  T* data_;
  nb::capsule owner_;
  size_t size_;
};

// A numpy copy of `values` with the given shape.
template <class T>
nb::ndarray<nb::numpy, T> to_numpy(std::span<const T> values, std::initializer_list<size_t> shape) {
  NumpyBuffer<T> buffer(values.size());
  std::copy(values.begin(), values.end(), buffer.span().begin());
  return buffer.view(shape);
}

}  // namespace diode::py

namespace nanobind::detail {

template <>
struct type_caster<diode::py::ArrayArg> {
  NB_TYPE_CASTER(diode::py::ArrayArg, const_name("numpy.typing.ArrayLike"))

  bool from_python(handle src, uint8_t, cleanup_list*) noexcept {
    value.obj = src;
    return true;
  }
};

}  // namespace nanobind::detail
