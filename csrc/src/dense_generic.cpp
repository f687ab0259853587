#define DIODE_DENSE_NAME dense_layer_generic
#define DIODE_VW 4
#include "dense_kernel.h"
