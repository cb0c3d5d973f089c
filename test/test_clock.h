/* test_clock.h - the tests' clock: monotonic seconds, for deadlines and
   the durations they print (POSIX clock_gettime). */
#ifndef COLL_TEST_CLOCK_H
#define COLL_TEST_CLOCK_H
#include <time.h>

static inline double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#endif
