/* test_tally.h - the pass/fail tally of the forked-process TCP tests
   (test_tcp_auth.c, test_tcp_flood.c, test_tcp_mac.c): CHECK(cond, fmt,
   ...) counts a pass, or counts a failure and says where and why on
   stderr; each test ends with its "N passed, N failed" line from g_pass
   and g_fail. */
#ifndef TEST_TALLY_H
#define TEST_TALLY_H

#include <stdio.h>

static long g_pass, g_fail;

#define CHECK(cond, ...) do {                                                 \
        if (cond) g_pass++;                                                    \
        else { g_fail++; fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);       \
               fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); }           \
    } while (0)

#endif
