#pragma once
// What an extremum kernel is asked for, on any device (ops/reduce_extrema.cpp).
namespace nf {

enum class Extremum { max, min };

}  // namespace nf
