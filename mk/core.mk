# mk/core.mk - the library with no transport of its own: the resumable
# requests driven round robin in one thread (over ports/coll_mailbox.h, plain
# memory), and what AUTO chooses.
#
#   make test-resumable      every collective and algorithm as resumable
#                            requests, round robin in one thread; with the
#                            port's irecv_fold (zero-copy reduce) and without
#   make test-resumable-san  the same under ASan + UBSan
#   make test-valgrind       valgrind memcheck on a sample of it
#   make auto-table          AUTO's choices as markdown tables (README)
#
# Outputs under $(B)/core/ (auto_table: $(B)/).
SAN := -fsanitize=address,undefined -fno-sanitize-recover=all

$(B)/core/test_resumable: test/test_resumable.c coll.h ports/coll_mailbox.h test/test_values.h | $(B)
	@mkdir -p $(@D)
	$(CC) -std=c99 -DCOLL_DEBUG $(CFLAGS) $(WARN) -o $@ $<

$(B)/core/test_resumable_san: test/test_resumable.c coll.h ports/coll_mailbox.h test/test_values.h | $(B)
	@mkdir -p $(@D)
	$(CC) -std=c99 -DCOLL_DEBUG -O1 -g $(WARN) $(SAN) -o $@ $<

.PHONY: test-resumable test-resumable-san
## test-resumable: round-robin matrix in one thread over the mailbox port (coll_start/progress), with and without zero-copy folds
test-resumable: $(B)/core/test_resumable
	$<
	COLL_TEST_NOFOLD=1 $<
## test-resumable-san: the same under ASan + UBSan
test-resumable-san: $(B)/core/test_resumable_san
	$<
	COLL_TEST_NOFOLD=1 $<

TEST_TARGETS += test-resumable test-resumable-san

# valgrind memcheck on a sample of the round-robin matrix (one thread, so it
# fits): uninitialised reads and stray writes that the sanitizers can miss.
.PHONY: test-valgrind
## test-valgrind: valgrind memcheck on a sample of the round-robin matrix
test-valgrind: $(B)/core/test_resumable
	@command -v valgrind >/dev/null || { echo "valgrind missing"; [ -z "$$CI" ] || exit 1; echo "valgrind: 0 passed, 0 failed"; exit 0; }
	valgrind -q --error-exitcode=9 --leak-check=no $(B)/core/test_resumable quick
TEST_TARGETS += test-valgrind

# what AUTO chooses, as markdown tables (for the README)
$(B)/auto_table: tools/auto_table.c coll.h | $(B)
	$(CC) -std=c99 -DCOLL_DEBUG $(CFLAGS) $(WARN) -o $@ $<
## auto-table: [docs] AUTO's choices by size and rank count, markdown
auto-table: $(B)/auto_table
	@$(B)/auto_table
