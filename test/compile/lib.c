/* The implementations alone, as a library object for decl_c89.c. */
#define COLL_IMPLEMENTATION
#include "../../coll.h"
#define COLL_THREADS_IMPLEMENTATION
#include "../../ports/coll_threads.h"
