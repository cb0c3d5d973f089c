/* The CUDA port's implementation compiled as C99: it uses only the CUDA
   runtime API, so a C program can have it without nvcc. */
#define _POSIX_C_SOURCE 200809L
#define COLL_CUDA_PORT_IMPLEMENTATION
#include "ports/coll_cuda_port.h"
