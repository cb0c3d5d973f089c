# make demo: the main example, ranks as threads, no dependencies.
POSIX := -D_POSIX_C_SOURCE=200809L

## demo-bin: build build/demo without running it
demo-bin: $(B)/demo
$(B)/demo: examples/demo.c coll.h ports/coll_threads.h test/test_ports.h | $(B)
	$(CC) -std=c99 $(POSIX) $(CFLAGS) $(WARN) -o $@ $< $(LDLIBS_THREADS)

## demo: 4 ranks in threads: the MindSpore primitives and every all-reduce, checked
demo: $(B)/demo
	$(B)/demo

$(B)/traffic: test/traffic.c coll.h ports/coll_threads.h test/test_ports.h | $(B)
	$(CC) -std=c99 $(POSIX) $(CFLAGS) $(WARN) -o $@ $< $(LDLIBS_THREADS)

## traffic: measured bytes and rounds of every algorithm against its formula, TSV
traffic: $(B)/traffic
	@$(B)/traffic

.PHONY: test-traffic test-demo
## test-traffic: the traffic table as a test (its closing line)
test-traffic: $(B)/traffic
	@$(B)/traffic >$(B)/traffic.tsv; rc=$$?; tail -1 $(B)/traffic.tsv; exit $$rc
## test-demo: the demo as a test, quiet unless it fails
test-demo: $(B)/demo
	@$(B)/demo >$(B)/demo.log 2>&1 && echo "demo: 1 passed, 0 failed" || { cat $(B)/demo.log; echo "demo: 0 passed, 1 failed"; exit 1; }

EXAMPLES_TARGETS += $(B)/demo

TEST_TARGETS += test-demo test-traffic

# what AUTO chooses, as markdown tables (for the README)
$(B)/auto_table: tools/auto_table.c coll.h | $(B)
	$(CC) -std=c99 $(CFLAGS) $(WARN) -o $@ $<
## auto-table: AUTO's choices by size and rank count, markdown
auto-table: $(B)/auto_table
	@$(B)/auto_table
