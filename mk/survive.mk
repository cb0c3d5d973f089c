# mk/survive.mk - failures seen and survived: one rank of 4-16 killed,
# stopped or silenced mid-run over the threads port, the survivors name
# it, shrink (coll_comm_shrink) and go on (test/test_shrink.c); the
# observer that sees every call and message (test/test_observer.c). The
# shm and TCP ports' shrink tests have their own fragments
# (mk/shrink-shm.mk, mk/shrink-tcp.mk).

SHRINK_DEPS := coll.h ports/coll_threads.h test/coll_test.h

$(CT)/test_shrink: test/test_shrink.c $(SHRINK_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=c99 $(CT_POSIX) -O2 -g -DCOLL_DEBUG $(WARN) -o $@ $< $(LDLIBS_THREADS)
$(CT)/asan/test_shrink: test/test_shrink.c $(SHRINK_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=c99 $(CT_POSIX) -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all -DCOLL_DEBUG $(WARN) -o $@ $< $(LDLIBS_THREADS)
$(CT)/tsan/test_shrink: test/test_shrink.c $(SHRINK_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=c99 $(CT_POSIX) $(CT_TSAN) -DCOLL_DEBUG $(WARN) -o $@ $< $(LDLIBS_THREADS)

.PHONY: test-shrink
## test-shrink: 200 trials plain, under ASan+UBSan and under TSan: a rank of 4-16 killed, stopped or silenced at a random call and step over the threads port; every survivor names it, shrinks and computes right
test-shrink: $(CT)/test_shrink $(CT)/asan/test_shrink $(CT)/tsan/test_shrink
	$(CT)/test_shrink
	SHRINK_MS=200 $(CT)/asan/test_shrink
	TSAN_OPTIONS=halt_on_error=1 SHRINK_MS=300 $(CT)/tsan/test_shrink
TEST_TARGETS += test-shrink

$(CT)/test_observer: test/test_observer.c $(SHRINK_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=c99 $(CT_POSIX) $(CFLAGS) $(WARN) -o $@ $< $(LDLIBS_THREADS)

.PHONY: test-observer
## test-observer: every rank's observer events (each call's turn and end, each message posted and done) against its schedule, counted through coll_describe, checks off and on, at 3, 4 and 7 ranks; plain and ASan+UBSan
test-observer: $(CT)/test_observer $(CT)/asan/test_observer
	$(CT)/test_observer
	$(CT)/asan/test_observer
TEST_TARGETS += test-observer
