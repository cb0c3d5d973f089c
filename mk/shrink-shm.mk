# mk/shrink-shm.mk - failures survived over the shared-memory port
# (ports/coll_shm.h): its renew alone (old messages dropped, newer ones
# held, a renewed epoch's deadline, dead peer and abort), then one rank of
# 4-16 forked processes killed (in a port call, or by the parent at any
# moment), stopped or silenced mid-run; the survivors name it,
# coll_comm_shrink and go on (test/test_shrink_shm.c). Plain and under
# ASan+UBSan; SHRINK_TRIALS, SHRINK_SEED, SHRINK_MS change a run.

SHRINK_SHM_B    := $(B)/shrink-shm
SHRINK_SHM_DEPS := coll.h ports/coll_shm.h test/coll_test.h
SHRINK_SHM_SAN  := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all

$(SHRINK_SHM_B)/test_shrink_shm: test/test_shrink_shm.c $(SHRINK_SHM_DEPS) | $(B)
	@mkdir -p $(@D)
	$(CC) -std=c99 -O2 -g -DCOLL_DEBUG $(WARN) -I. -o $@ $<

$(SHRINK_SHM_B)/asan/test_shrink_shm: test/test_shrink_shm.c $(SHRINK_SHM_DEPS) | $(B)
	@mkdir -p $(@D)
	$(CC) -std=c99 $(SHRINK_SHM_SAN) -DCOLL_DEBUG $(WARN) -I. -o $@ $<

.PHONY: test-shrink-shm
## test-shrink-shm: the shm port's renew, then 200 trials plain and 200 under ASan+UBSan: a rank of 4-16 processes killed (by itself or the parent), stopped or silenced mid-call; every survivor names it, shrinks and computes right; no /dev/shm leftovers
test-shrink-shm: $(SHRINK_SHM_B)/test_shrink_shm $(SHRINK_SHM_B)/asan/test_shrink_shm
	timeout 600 $(SHRINK_SHM_B)/test_shrink_shm
	timeout 600 $(SHRINK_SHM_B)/asan/test_shrink_shm

TEST_TARGETS += test-shrink-shm
