# mk/hier.mk - hierarchical collectives (coll_hier.h) over the threads port,
# with simulated hosts.
#
#   make test-hier   every collective on interleaved, host-major and uneven
#                    host maps against a plain loop; the per-level
#                    model's pick (coll_hier_choose) against the test's
#                    own argmin loop, the same on every rank, the picked
#                    road's result right: plain -O2, then
#                    ASan+UBSan (quick level) and TSan (one dtype per
#                    collective, with work), and coll_hier.h
#                    compiled as C99 and C++11 with every warning an error
#
# Outputs under $(B)/hier/.
HIER_B    := $(B)/hier
HIER_DEPS := coll.h coll_hier.h ports/coll_threads.h test/coll_test.h
HIER_CC   := -std=c99 -D_POSIX_C_SOURCE=200809L -DCOLL_DEBUG -DCOLL_HIER_CHAIN_BYTES=4000   # 1000 int32: the chain road

$(HIER_B)/test_hier: test/test_hier.c $(HIER_DEPS)
	@mkdir -p $(@D)
	$(CC) $(HIER_CC) $(CFLAGS) $(WARN) -o $@ $< $(LDLIBS_THREADS) -lm

$(HIER_B)/asan/test_hier: test/test_hier.c $(HIER_DEPS)
	@mkdir -p $(@D)
	$(CC) $(HIER_CC) -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all $(WARN) -o $@ $< $(LDLIBS_THREADS) -lm

$(HIER_B)/tsan/test_hier: test/test_hier.c $(HIER_DEPS)
	@mkdir -p $(@D)
	$(CC) $(HIER_CC) -O1 -g -fsanitize=thread $(WARN) -o $@ $< $(LDLIBS_THREADS) -lm

.PHONY: test-hier test-hier-compile
## test-hier: coll_hier.h's collectives on simulated hosts (interleaved, host-major, uneven) against a plain loop; plain, ASan+UBSan, TSan; C99 and C++ compile checks
test-hier: $(HIER_B)/test_hier $(HIER_B)/asan/test_hier $(HIER_B)/tsan/test_hier test-hier-compile
	$(HIER_B)/test_hier
	COLL_TEST_LEVEL=0 $(HIER_B)/asan/test_hier
	TSAN_OPTIONS=halt_on_error=1 COLL_TEST_LEVEL=-1 $(HIER_B)/tsan/test_hier

# coll_hier.h with its implementation, in each language mode; under CI=true
# a missing compiler fails, else it is skipped loudly.
HIER_TU := '\#define COLL_IMPLEMENTATION\n\#include "coll_hier.h"\nint main(void) { return coll_hier_road(0); }\n'
## test-hier-compile: [internal] coll_hier.h with its implementation as C99 (gcc, clang) and C++11/C++17 (g++, clang++), -Wall -Wextra -Wpedantic -Werror
test-hier-compile:
	@mkdir -p $(HIER_B)/compile; printf $(HIER_TU) >$(HIER_B)/compile/tu.c; pass=0; fail=0; \
	for m in gcc:c:c99 clang:c:c99 gcc:c:c11 g++:c++:c++11 clang++:c++:c++11 g++:c++:c++17; do \
	    cc=$${m%%:*}; rest=$${m#*:}; lang=$${rest%%:*}; std=$${rest#*:}; \
	    if ! command -v $$cc >/dev/null 2>&1; then \
	        if [ "$$CI" = true ]; then echo "FAIL hier-compile: $$cc not found (required under CI)"; fail=$$((fail + 1)); \
	        else echo "hier-compile: *** $$cc not found: SKIPPING ***"; fi; continue; fi; \
	    if $$cc -x $$lang -std=$$std $(WARN) -I. -c $(HIER_B)/compile/tu.c -o $(HIER_B)/compile/tu-$$cc-$$std.o; \
	    then pass=$$((pass + 1)); echo "ok   hier-compile $$cc $$std"; \
	    else fail=$$((fail + 1)); echo "FAIL hier-compile $$cc $$std"; fi; \
	done; echo "hier-compile: $$pass passed, $$fail failed"; [ $$fail -eq 0 ]

TEST_TARGETS += test-hier
