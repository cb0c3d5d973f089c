/* torch/coll_ports.c - the C side of the torch.distributed backend: coll.h
   with coll_hier.h (the hierarchical forms, for jobs over several hosts)
   and the ports it picks from (shm on one host, the composite port of
   coll_hosts.h over several, TCP when forced), compiled once as C and
   linked into the Python module. coll_hosts.h's implementation brings
   coll_shm.h's and coll_tcp.h's with it.

   The ports use POSIX and Linux calls (shm_open, futex, getaddrinfo,
   clock_gettime) that a strict -std=c99 hides: the feature macros below
   make them visible whatever -std the build uses. They must come before
   the first system header. */
#define _GNU_SOURCE
#define _POSIX_C_SOURCE 200809L

#define COLL_IMPLEMENTATION
#include "coll_hier.h"
#define COLL_HOSTS_IMPLEMENTATION
#include "ports/coll_hosts.h"
