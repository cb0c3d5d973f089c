/* test_tally.h - the pass/fail tally of the forked-process TCP tests
   (test_tcp_auth.c, test_tcp_flood.c, test_tcp_mac.c) and of the paper
   test of shift exchanges (test_shift.c): CHECK(cond, fmt,
   ...) counts a pass, or counts a failure and says where and why on
   stderr; RUN(call, what) runs one part and prints a line with its
   passes, failures and seconds (coll_tcp__now_ms: include after
   ports/coll_tcp.h's implementation); each test ends with its "N passed,
   N failed" line from g_pass and g_fail. */
#ifndef TEST_TALLY_H
#define TEST_TALLY_H

#include <stdio.h>

static long g_pass, g_fail;

#define CHECK(cond, ...) do {                                                 \
        if (cond) g_pass++;                                                    \
        else { g_fail++; fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);       \
               fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); }           \
    } while (0)

#define RUN(call, what) do {                                                   \
        long p0 = g_pass, f0 = g_fail;                                         \
        long long t0 = coll_tcp__now_ms();                                     \
        call;                                                                  \
        printf("  %-56s %ld ok, %ld wrong, %.1f s\n", what, g_pass - p0,         \
               g_fail - f0, (double)(coll_tcp__now_ms() - t0) / 1000);         \
        fflush(stdout);                                                        \
    } while (0)

#endif
