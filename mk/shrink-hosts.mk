# mk/shrink-hosts.mk - failures survived over the composite port
# (ports/coll_hosts.h: shm between a host's ranks, TCP between hosts),
# ranks as processes on 127.0.0.1 put on emulated hosts by COLL_HOST_ID
# (no root, no namespaces). First the port's epochs alone, 2 hosts x 2
# ranks: renew after an abort, older messages dropped, older handles
# voided, newer messages held, a renewed epoch's deadline failing only
# the receives it ends, a dead peer failing only its calls, missing. Then
# the soak: one rank of 4 (2 x 2) or 6 (2 x 3, 3 x 2), interleaved or
# host-major, killed, stopped or silenced at a random call and point of an
# all-reduce loop; every survivor gets an error within the deadline,
# shrinks (coll_comm_shrink) to the true survivors and all-reduces right
# on the new communicator (test/test_shrink_hosts.c).
#
#   make test-shrink-hosts   100 trials plain, then 30 under ASan + UBSan
#
# SHRINK_TRIALS, SHRINK_SEED (printed at the start), SHRINK_DEADLINE_MS
# and SHRINK_VERBOSE=1 pass through from the environment.

SHRINK_HOSTSB   := $(B)/shrink-hosts
SHRINK_HOSTS_CF := -std=c99 -D_DEFAULT_SOURCE $(WARN) -I.
SHRINK_HOSTS_DEPS := test/test_shrink_hosts.c test/soak_victim.h coll.h ports/coll_hosts.h ports/coll_tcp.h \
                     ports/coll_shm.h test/coll_test.h

$(SHRINK_HOSTSB)/test_shrink_hosts: $(SHRINK_HOSTS_DEPS)
	@mkdir -p $(@D)
	$(CC) $(SHRINK_HOSTS_CF) -O2 -g -o $@ $<

$(SHRINK_HOSTSB)/asan/test_shrink_hosts: $(SHRINK_HOSTS_DEPS)
	@mkdir -p $(@D)
	$(CC) $(SHRINK_HOSTS_CF) -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
	    -fno-sanitize-recover=all -o $@ $<

.PHONY: test-shrink-hosts
## test-shrink-hosts: 100 trials plain, 30 under ASan+UBSan: a rank of 4-6 on 2-3 emulated hosts (shm within, TCP between) killed, stopped or silenced mid-all-reduce; every survivor fails in time, shrinks to the true survivors and computes right
test-shrink-hosts: $(SHRINK_HOSTSB)/test_shrink_hosts $(SHRINK_HOSTSB)/asan/test_shrink_hosts
	@timeout 300 $(SHRINK_HOSTSB)/test_shrink_hosts
	@SHRINK_TRIALS=$${SHRINK_TRIALS:-30} timeout 300 $(SHRINK_HOSTSB)/asan/test_shrink_hosts
TEST_TARGETS += test-shrink-hosts
