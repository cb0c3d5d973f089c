# mk/ports-threads.mk - the ports whose ranks live in one process: threads
# (ports/coll_threads.h) and the cooperative mailbox (ports/coll_mailbox.h),
# under the port checker; and the numpy ring simulation seed, whose hosts
# share the mailbox.
#
#   make test-check-port     test/check_port.h over the threads port (1..7
#                            ranks, and stripped to send/recv; then again
#                            with COLL_THREADS_PULL=1) and over the
#                            mailbox port round robin in one thread (1..8
#                            ranks); the checker must also fail a port
#                            that damages messages
#   make test-lifecycle      init, port, abort, close of every port
#   make seed-ring-sim       the ring simulation seed, with its trace
#   make seed-ring-sim-test  the same, checked
#
# (The core matrix over the threads port is mk/core-tests.mk; the one-thread
# round-robin matrix, mk/core.mk.)
PT_B    := $(B)/core
PT_HDRS := coll.h ports/coll_threads.h ports/coll_mailbox.h test/check_port.h test/test_clock.h \
           test/coll_test.h test/test_values.h test/test_ports.h

$(PT_B)/test_check_port: test/test_check_port.c $(PT_HDRS) | $(B)
	@mkdir -p $(@D)
	$(CC) -std=c99 -D_POSIX_C_SOURCE=200809L $(CFLAGS) $(WARN) -I. -o $@ $< $(LDLIBS_THREADS)

.PHONY: test-check-port
## test-check-port: the port checker over the threads port and the mailbox port (round robin)
test-check-port: $(PT_B)/test_check_port
	@timeout 300 $<
	@echo "  again, the threads port's receivers copying at every rank count (COLL_THREADS_PULL=1):"
	@COLL_THREADS_PULL=1 timeout 300 $<

TEST_TARGETS += test-check-port

# The lifecycle every port shares (init, port, abort, close): threads,
# mailbox, shm and tcp in one program (MPI's is in test-mpi).
$(PT_B)/test_lifecycle: test/test_lifecycle.c $(PT_HDRS) ports/coll_shm.h ports/coll_tcp.h | $(B)
	@mkdir -p $(@D)
	$(CC) -std=c99 -D_GNU_SOURCE -DCOLL_DEBUG $(CFLAGS) $(WARN) -I. -o $@ $< $(LDLIBS_THREADS) -lrt

.PHONY: test-lifecycle
## test-lifecycle: every port's init, port, abort and close (threads, mailbox, shm, tcp)
test-lifecycle: $(PT_B)/test_lifecycle
	@timeout 120 $<

TEST_TARGETS += test-lifecycle

# ---- the numpy ring simulation seed, over the mailbox ---------------------------
# (built beside the MPI and shm tests, where it has always been)
RING_B := $(B)/ports-mpi-shm

$(RING_B)/seed_ring_sim: examples/seed_ring_sim.c coll.h ports/coll_mailbox.h | $(B)
	@mkdir -p $(@D)
	$(CC) -std=c99 $(CFLAGS) $(WARN) -I. -o $@ $< -lm

.PHONY: seed-ring-sim seed-ring-sim-test
## seed-ring-sim: [run] the numpy ring simulation seed over the mailbox port, with its trace
seed-ring-sim: $(RING_B)/seed_ring_sim
	$(RING_B)/seed_ring_sim

## seed-ring-sim-test: the ring simulation seed, checked
seed-ring-sim-test: $(RING_B)/seed_ring_sim
	$(RING_B)/seed_ring_sim --check

TEST_TARGETS += seed-ring-sim-test
