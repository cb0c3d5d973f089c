/* coll_lib.c - the library alone, as a firmware build would compile it:
   `make cross` builds this file for each bare-metal target and checks that
   the object asks for nothing but the compiler's own arithmetic helpers. */
#define COLL_IMPLEMENTATION
#include "coll.h"
#ifndef COLL_NO_LAYOUT                  /* the full build has the layouts too */
#include "coll_layout.h"
#endif
