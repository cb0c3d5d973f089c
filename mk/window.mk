# mk/window.mk - collectives over windows (coll_window.h): ranks that load
# and store each other's buffers, over the windows of the threads port, of
# the smp mailbox (cores on shared memory, as threads) and of the shm port
# (forked processes, buffers in the segment's heap: COLL_SHM_HEAP_BYTES).
#
#   make test-window   every collective against a plain loop on every rank
#                      at 1, 2, 3, 4 and 7 ranks (all-reduce: every dtype
#                      and operator, one-shot, two-shot and AUTO, in place
#                      and out), refusals told to every rank, a port
#                      without windows, a rank that never calls; over shm
#                      also buffers outside the heap (declined: coll.h's
#                      own call on every rank), forged records (every rank
#                      fails), a rank that exits, is killed or hangs before
#                      a sync, ranks joined by name at other addresses;
#                      plain, ASan+UBSan, TSan (shm too: each forked rank
#                      a process TSan watches on its own, the matrix at
#                      its lighter level); the inline form of small calls
#                      (test_window_inline.c: one post, one sync; back to
#                      back with ranks napping; refusals across the limit;
#                      a lying record); coll_window.h compiled as C99, C11
#                      and C++ with every warning an error
#
# Outputs under $(B)/window/.
WIN_B    := $(B)/window
WIN_DEPS := coll.h coll_window.h ports/coll_threads.h ports/coll_smp_mailbox.h ports/coll_shm.h \
            test/coll_test.h test/test_values.h
WIN_CC   := -std=c99 -D_POSIX_C_SOURCE=200809L -DCOLL_DEBUG '-DCOLL_SMP_BARRIER()=__sync_synchronize()'
WIN_C11  := -std=c11 -D_POSIX_C_SOURCE=200809L -DCOLL_DEBUG   # the smp mailbox's C11 atomics (TSan sees them)

# each test program three ways: plain, ASan+UBSan, TSan
WIN_TESTS := test_window test_window_auto test_window_inline
$(WIN_TESTS:%=$(WIN_B)/%): $(WIN_B)/%: test/%.c $(WIN_DEPS)
	@mkdir -p $(@D)
	$(CC) $(WIN_CC) $(CFLAGS) $(WARN) -I. -o $@ $< $(LDLIBS_THREADS) -lm

$(WIN_TESTS:%=$(WIN_B)/asan/%): $(WIN_B)/asan/%: test/%.c $(WIN_DEPS)
	@mkdir -p $(@D)
	$(CC) $(WIN_CC) -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all $(WARN) -I. -o $@ $< $(LDLIBS_THREADS) -lm

$(WIN_TESTS:%=$(WIN_B)/tsan/%): $(WIN_B)/tsan/%: test/%.c $(WIN_DEPS)
	@mkdir -p $(@D)
	$(CC) $(WIN_C11) -O1 -g -fsanitize=thread $(WARN) -I. -o $@ $< $(LDLIBS_THREADS) -lm

.PHONY: test-window test-window-compile
## test-window: coll_window.h's collectives over the windows of the threads, smp mailbox and shm ports against a plain loop at 1-7 ranks (every dtype and op for all-reduce), refusals, no windows, a rank that never calls, the inline form of small calls (one sync); shm: declined, forged, dead ranks, by name; plain, ASan+UBSan, TSan; C and C++ compile checks
test-window: $(WIN_B)/test_window $(WIN_B)/asan/test_window $(WIN_B)/tsan/test_window test-window-compile \
             $(WIN_B)/test_window_inline $(WIN_B)/asan/test_window_inline $(WIN_B)/tsan/test_window_inline
	$(WIN_B)/test_window
	COLL_TEST_LEVEL=0 $(WIN_B)/asan/test_window
	TSAN_OPTIONS=halt_on_error=1 COLL_TEST_LEVEL=-1 $(WIN_B)/tsan/test_window
	$(WIN_B)/test_window_inline
	$(WIN_B)/asan/test_window_inline
	TSAN_OPTIONS=halt_on_error=1 $(WIN_B)/tsan/test_window_inline

# coll_window.h with its implementation, in each language mode; under CI=true
# a missing compiler fails, else it is skipped loudly.
WIN_TU := '\#define COLL_IMPLEMENTATION\n\#include "coll_window.h"\nint main(void) { return coll_window_ok(0); }\n'
## test-window-compile: [internal] coll_window.h with its implementation as C99 (gcc, clang), C11 and C++11/C++17 (g++, clang++), -Wall -Wextra -Wpedantic -Werror
test-window-compile:
	@mkdir -p $(WIN_B)/compile; printf $(WIN_TU) >$(WIN_B)/compile/tu.c; pass=0; fail=0; \
	for m in gcc:c:c99 clang:c:c99 gcc:c:c11 g++:c++:c++11 clang++:c++:c++11 g++:c++:c++17; do \
	    cc=$${m%%:*}; rest=$${m#*:}; lang=$${rest%%:*}; std=$${rest#*:}; \
	    if ! command -v $$cc >/dev/null 2>&1; then \
	        if [ "$$CI" = true ]; then echo "FAIL window-compile: $$cc not found (required under CI)"; fail=$$((fail + 1)); \
	        else echo "window-compile: *** $$cc not found: SKIPPING ***"; fi; continue; fi; \
	    if $$cc -x $$lang -std=$$std $(WARN) -I. -c $(WIN_B)/compile/tu.c -o $(WIN_B)/compile/tu-$$cc-$$std.o; \
	    then pass=$$((pass + 1)); echo "ok   window-compile $$cc $$std"; \
	    else fail=$$((fail + 1)); echo "FAIL window-compile $$cc $$std"; fi; \
	done; echo "window-compile: $$pass passed, $$fail failed"; [ $$fail -eq 0 ]

TEST_TARGETS += test-window

# ---- coll.h's own AUTO calls over windows (the direct layer, >>win-auto) ----
# the core matrix (test/test_core.c) with coll_window.h bringing the
# implementation in: every AUTO row over the threads port runs over windows
# (COLL_WINDOW_DIRECT_MIN=0: small calls too)
WIN_CORE_DEPS := test/test_core.c coll.h coll_window.h coll_layout.h ports/coll_threads.h test/coll_test.h \
                 test/test_ports.h test/test_checks.c test/test_values.h test/test_clock.h
$(WIN_B)/test_core_win: $(WIN_CORE_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=c99 -D_POSIX_C_SOURCE=200809L -DCOLL_DEBUG -DTEST_CORE_WINDOWS -DCOLL_WINDOW_DIRECT_MIN=0 $(CFLAGS) $(WARN) -o $@ $< $(LDLIBS_THREADS) -lm
$(WIN_B)/asan/test_core_win: $(WIN_CORE_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=c99 -D_POSIX_C_SOURCE=200809L -DCOLL_DEBUG -DTEST_CORE_WINDOWS -DCOLL_WINDOW_DIRECT_MIN=0 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all $(WARN) -o $@ $< $(LDLIBS_THREADS) -lm
$(WIN_B)/tsan/test_core_win: $(WIN_CORE_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=c99 -D_POSIX_C_SOURCE=200809L -DCOLL_DEBUG -DTEST_CORE_WINDOWS -DCOLL_WINDOW_DIRECT_MIN=0 -O1 -g -fsanitize=thread $(WARN) -o $@ $< $(LDLIBS_THREADS) -lm

.PHONY: test-window-auto
## test-window-auto: coll.h's blocking AUTO calls over windows (coll_window.h's direct layer): the road each call takes (window syncs or messages) and its result on every rank at 1-7 ranks, forced, off, ruled, sub-communicators, declined, no scratch; and the core matrix (quick) with AUTO over windows; plain, ASan+UBSan, TSan
test-window-auto: $(WIN_B)/test_window_auto $(WIN_B)/asan/test_window_auto $(WIN_B)/tsan/test_window_auto \
                  $(WIN_B)/test_core_win $(WIN_B)/asan/test_core_win $(WIN_B)/tsan/test_core_win
	$(WIN_B)/test_window_auto
	$(WIN_B)/asan/test_window_auto
	TSAN_OPTIONS=halt_on_error=1 $(WIN_B)/tsan/test_window_auto
	COLL_TEST_LEVEL=0 $(WIN_B)/test_core_win
	COLL_TEST_LEVEL=0 $(WIN_B)/asan/test_core_win
	TSAN_OPTIONS=halt_on_error=1 COLL_TEST_LEVEL=0 COLL_THREADS_PULL=1 $(WIN_B)/tsan/test_core_win

TEST_TARGETS += test-window-auto
