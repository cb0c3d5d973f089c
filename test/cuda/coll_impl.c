/* coll.h's implementation, compiled as C99 by the host compiler and linked
   into the CUDA programs (their own files are compiled by nvcc). */
#define COLL_IMPLEMENTATION
#include "coll.h"
