# mk/dtree.mk - the double-tree all-reduce's schedule played on paper for
# up to 257 ranks (and 4095, 4096): every message received in the step it
# is sent, no cycle of ranks that all send (or all receive) first, every
# rank's sum against a plain loop, at most 2n bytes sent per rank.
#
#   make test-dtree     test/test_dtree.c (seconds)

$(B)/test_dtree: test/test_dtree.c coll.h | $(B)
	$(CC) -std=c99 $(CFLAGS) $(WARN) -o $@ $<

.PHONY: test-dtree
## test-dtree: the double-tree schedule on 1-70, 100-257, 4095 and 4096 ranks: aligned steps, no deadlock cycle, every rank's sum
test-dtree: $(B)/test_dtree
	$(B)/test_dtree

TEST_TARGETS += test-dtree
