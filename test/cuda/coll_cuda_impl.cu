/* The CUDA kernels of coll_cuda.h and the CUDA port, compiled once by nvcc
   and linked into the tests and the benchmark. */
#define COLL_CUDA_IMPLEMENTATION
#define COLL_CUDA_PORT_IMPLEMENTATION
#include "coll_cuda.h"
#include "ports/coll_cuda_port.h"
