# mk/shrink-tcp.mk - failures survived over the TCP port: one rank of 4-16
# killed, stopped or silenced at a random call and point of an all-reduce
# loop (ranks as processes on 127.0.0.1); every survivor gets an error
# within the deadline, shrinks (coll_comm_shrink) to the true survivors and
# all-reduces right on the new communicator (test/test_shrink_tcp.c). First
# the port's epochs alone: renew after an abort, older frames dropped,
# newer ones held, a dead peer failing only its calls.
#
#   make test-shrink-tcp   200 trials plain, then 200 under ASan + UBSan
#
# SHRINK_TRIALS, SHRINK_SEED (printed at the start), SHRINK_DEADLINE_MS
# and SHRINK_VERBOSE=1 pass through from the environment.

SHRINK_TCPB   := $(B)/shrink-tcp
SHRINK_TCP_CF := -std=c99 -D_POSIX_C_SOURCE=200809L $(WARN) -I.
SHRINK_TCP_DEPS := test/test_shrink_tcp.c test/soak_victim.h coll.h ports/coll_tcp.h test/coll_test.h

$(SHRINK_TCPB)/test_shrink_tcp: $(SHRINK_TCP_DEPS)
	@mkdir -p $(@D)
	$(CC) $(SHRINK_TCP_CF) -O2 -g -o $@ $<

$(SHRINK_TCPB)/asan/test_shrink_tcp: $(SHRINK_TCP_DEPS)
	@mkdir -p $(@D)
	$(CC) $(SHRINK_TCP_CF) -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
	    -fno-sanitize-recover=all -o $@ $<

.PHONY: test-shrink-tcp
## test-shrink-tcp: 200 trials plain and under ASan+UBSan: a rank of 4-16 killed, stopped or silenced mid-all-reduce over TCP; every survivor fails in time, shrinks to the true survivors and computes right
test-shrink-tcp: $(SHRINK_TCPB)/test_shrink_tcp $(SHRINK_TCPB)/asan/test_shrink_tcp
	@timeout 400 $(SHRINK_TCPB)/test_shrink_tcp
	@timeout 600 $(SHRINK_TCPB)/asan/test_shrink_tcp
TEST_TARGETS += test-shrink-tcp
