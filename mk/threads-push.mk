# mk/threads-push.mk - the threads port's sender copies a send it left for
# its receiver (PULL) when the receiver does not come to it (test/
# test_threads_push.c), plain and under TSan.
#
#   make test-threads-push   2 ranks; copies and folds; COLL_THREADS_PULL=1
#                            and =0 (seconds when it passes; a port whose
#                            sender only waits takes 2 s per case and fails)
#
# Not in `make test`: the port change it tests (a waiting sender copies
# its queued sends, with a shorter yield stage and the wake after the
# unlock) was taken back out after the core matrix timed out (8 s without
# progress) at p = 7 and 16 over the duplex and rendezvous ports, 128 B
# segments, in a fresh-clone run on a loaded machine. The port here fails
# it (36 of 304) until that change returns with the cause found.

TP_B    := $(B)/core
TP_DEPS := test/test_threads_push.c coll.h ports/coll_threads.h test/coll_test.h

$(TP_B)/test_threads_push: $(TP_DEPS) | $(B)
	@mkdir -p $(@D)
	$(CC) -std=c99 -D_POSIX_C_SOURCE=200809L $(CFLAGS) $(WARN) -I. -o $@ $< $(LDLIBS_THREADS)

$(TP_B)/tsan/test_threads_push: $(TP_DEPS) | $(B)
	@mkdir -p $(@D)
	$(CC) -std=c99 -D_POSIX_C_SOURCE=200809L -O1 -g -fsanitize=thread $(WARN) -I. -o $@ $< $(LDLIBS_THREADS)

.PHONY: test-threads-push
## test-threads-push: the threads port's sender copies what a receiver that does not run left (PULL), plain and TSan
test-threads-push: $(TP_B)/test_threads_push $(TP_B)/tsan/test_threads_push
	@timeout 120 $(TP_B)/test_threads_push
	@TSAN_OPTIONS=halt_on_error=1 timeout 120 $(TP_B)/tsan/test_threads_push

