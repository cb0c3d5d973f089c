/* coll_test.h - the project's test harness, the same on a host, under
   qemu-user and on bare metal: no heap, no setjmp, no stdio unless you leave
   the printing to it.

       COLL_CHECK(x == 3);                            counts, never aborts
       COLL_CHECK_MSG(rc == 0, "rank %d: rc %d", r, rc);
       COLL_CHECK_EQ(rc, COLL_OK);                    shows both values
       coll_test_unavailable();                       counted apart, not a pass
       return coll_test_summary("core");              "core: N passed, N failed"

   A failing check prints "FAIL file:line: message" (the first
   COLL_TEST_MAX_REPORTS of them; the rest are only counted) and the run goes
   on, so one bug shows all its symptoms. The last line is what
   test/run_tests.sh adds up; coll_test_summary returns 1 when anything
   failed (or nothing was checked), 0 otherwise, for main to return.

   CONFIGURATION
     COLL_TEST_PRINTF          printf-like function          (printf)
     COLL_TEST_MAX_REPORTS     failures printed in full      (40)
     COLL_TEST_SINGLE_THREAD   plain counters, no atomics    (off)
   Checks may run on several threads at once: the counters are bumped with
   atomic adds unless COLL_TEST_SINGLE_THREAD is defined. */
#ifndef COLL_TEST_H
#define COLL_TEST_H

#ifndef COLL_TEST_PRINTF
#include <stdio.h>
#define COLL_TEST_PRINTF printf
#endif
#ifndef COLL_TEST_MAX_REPORTS
#define COLL_TEST_MAX_REPORTS 40
#endif

#ifdef __GNUC__
#define COLL_TEST__UNUSED __attribute__((unused))
#else
#define COLL_TEST__UNUSED
#endif

#if defined(COLL_TEST_SINGLE_THREAD) || !defined(__GNUC__)
#define COLL_TEST__INC(x) (++(x))
#else
#define COLL_TEST__INC(x) __atomic_add_fetch(&(x), 1, __ATOMIC_RELAXED)
#endif

/* One copy per test program: each includes this header in one file. */
static COLL_TEST__UNUSED unsigned long coll_test_passed, coll_test_failed, coll_test_na;

/* Counts a failure; says whether to print its message. */
static COLL_TEST__UNUSED int coll_test__fail(const char *file, int line)
{
    unsigned long n = COLL_TEST__INC(coll_test_failed);
    if (n > COLL_TEST_MAX_REPORTS) {
        if (n == COLL_TEST_MAX_REPORTS + 1)
            COLL_TEST_PRINTF("(further failures are counted, not shown)\n");
        return 0;
    }
    COLL_TEST_PRINTF("FAIL %s:%d: ", file, line);
    return 1;
}

#define COLL_CHECK_MSG(cond, ...)                                                \
    do {                                                                         \
        if (cond) COLL_TEST__INC(coll_test_passed);                             \
        else if (coll_test__fail(__FILE__, __LINE__)) {                          \
            COLL_TEST_PRINTF(__VA_ARGS__);                                       \
            COLL_TEST_PRINTF("\n");                                              \
        }                                                                        \
    } while (0)

#define COLL_CHECK(cond) COLL_CHECK_MSG(cond, "%s", #cond)

/* Integer equality, both sides shown. Each side is evaluated twice. */
#define COLL_CHECK_EQ(a, b)                                                      \
    COLL_CHECK_MSG((long long)(a) == (long long)(b), "%s == %s: %lld vs %lld",   \
                   #a, #b, (long long)(a), (long long)(b))

/* Something that could not be tried (an algorithm not yet written): kept
   apart from both passes and failures, and shown in the summary. */
static COLL_TEST__UNUSED void coll_test_unavailable(void) { COLL_TEST__INC(coll_test_na); }

static COLL_TEST__UNUSED int coll_test_summary(const char *name)
{
    if (coll_test_na)
        COLL_TEST_PRINTF("%s: %lu passed, %lu failed, %lu not available\n", name,
                         coll_test_passed, coll_test_failed, coll_test_na);
    else
        COLL_TEST_PRINTF("%s: %lu passed, %lu failed\n", name,
                         coll_test_passed, coll_test_failed);
    return coll_test_failed != 0 || coll_test_passed == 0;
}

#endif /* COLL_TEST_H */
