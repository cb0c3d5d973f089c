# The library's own targets: the demo, the traffic table, the resumable test.
SAN := -fsanitize=address,undefined -fno-sanitize-recover=all

$(B)/core/test_resumable: test/test_resumable.c coll.h ports/coll_mailbox.h test/test_values.h | $(B)
	@mkdir -p $(@D)
	$(CC) -std=c99 $(CFLAGS) $(WARN) -o $@ $<

$(B)/core/test_resumable_san: test/test_resumable.c coll.h ports/coll_mailbox.h test/test_values.h | $(B)
	@mkdir -p $(@D)
	$(CC) -std=c99 -O1 -g $(WARN) $(SAN) -o $@ $<

.PHONY: test-resumable test-resumable-san
## test-resumable: round-robin matrix in one thread over the mailbox port (coll_start/progress)
test-resumable: $(B)/core/test_resumable
	$<
## test-resumable-san: the same under ASan + UBSan
test-resumable-san: $(B)/core/test_resumable_san
	$<

TEST_TARGETS += test-resumable test-resumable-san

# valgrind memcheck on a sample of the round-robin matrix (one thread, so it
# fits): uninitialised reads and stray writes that the sanitizers can miss.
.PHONY: test-valgrind
## test-valgrind: valgrind memcheck on a sample of the round-robin matrix
test-valgrind: $(B)/core/test_resumable
	@command -v valgrind >/dev/null || { echo "valgrind missing"; [ -z "$$CI" ] || exit 1; echo "valgrind: 0 passed, 0 failed"; exit 0; }
	valgrind -q --error-exitcode=9 --leak-check=no $(B)/core/test_resumable quick
TEST_TARGETS += test-valgrind

$(B)/core/test_tune: test/test_tune.c coll.h ports/coll_threads.h | $(B)
	@mkdir -p $(@D)
	$(CC) -std=c99 -D_POSIX_C_SOURCE=200809L $(CFLAGS) $(WARN) -o $@ $< $(LDLIBS_THREADS)
.PHONY: test-tune
## test-tune: coll_tune, coll_set_tuning and coll_add_rule
test-tune: $(B)/core/test_tune
	$<
TEST_TARGETS += test-tune
