# mk/shift.mk - the order of a shift exchange (send to r+d, receive from
# r-d) over a port without sendrecv, played on paper on a rendezvous port:
# every cycle of the shift has a rank that sends first and one that
# receives first, and the exchange completes.
#
#   make test-shift     test/test_shift.c (seconds)

$(B)/test_shift: test/test_shift.c coll.h | $(B)
	$(CC) -std=c99 $(CFLAGS) $(WARN) -o $@ $<

.PHONY: test-shift
## test-shift: a shift exchange's send/receive order on 2-70, 100-257 ranks, every shift: no deadlock on a rendezvous port
test-shift: $(B)/test_shift
	$(B)/test_shift

TEST_TARGETS += test-shift
