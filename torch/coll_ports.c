/* torch/coll_ports.c - the C side of the torch.distributed backend: coll.h
   and the two ports it picks from (shm on one host, TCP across hosts),
   compiled once as C and linked into the Python module.

   The ports use POSIX and Linux calls (shm_open, futex, getaddrinfo,
   clock_gettime) that a strict -std=c99 hides: the feature macros below
   make them visible whatever -std the build uses. They must come before
   the first system header. */
#define _GNU_SOURCE
#define _POSIX_C_SOURCE 200809L

#define COLL_IMPLEMENTATION
#include "coll.h"
#define COLL_SHM_IMPLEMENTATION
#include "ports/coll_shm.h"
#define COLL_TCP_IMPLEMENTATION
#include "ports/coll_tcp.h"
