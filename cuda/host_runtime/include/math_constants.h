// TrieScope's host CUDA runtime: the CUDART_* constants of CUDA's
// math_constants.h that device code uses, with the same values.
#pragma once
#include <limits>

#define CUDART_INF (std::numeric_limits<double>::infinity())
#define CUDART_INF_F (std::numeric_limits<float>::infinity())
#define CUDART_NAN (std::numeric_limits<double>::quiet_NaN())
#define CUDART_NAN_F (std::numeric_limits<float>::quiet_NaN())
#define CUDART_PI 3.1415926535897931e+0
#define CUDART_PI_F 3.141592654f
#define CUDART_LN2 6.9314718055994529e-1
#define CUDART_LN2_F 0.693147181f
#define CUDART_MAX_NORMAL_F 3.40282347e+38f
#define CUDART_MIN_DENORM_F 1.40129846e-45f
