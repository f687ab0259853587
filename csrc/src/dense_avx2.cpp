#define DIODE_DENSE_NAME dense_layer_avx2
#define DIODE_VW 8
#include "dense_kernel.h"
