# mk/demo.mk - the main example: 4 ranks as threads, no dependencies.
#
#   make demo        build and run build/demo
#   make demo-bin    build it only
#   make test-demo   the demo as a test, quiet unless it fails
POSIX := -D_POSIX_C_SOURCE=200809L

## demo-bin: [internal] build build/demo without running it
demo-bin: $(B)/demo
$(B)/demo: examples/demo.c coll.h ports/coll_threads.h test/test_ports.h | $(B)
	$(CC) -std=c99 $(POSIX) $(CFLAGS) $(WARN) -o $@ $< $(LDLIBS_THREADS)

## demo: [run] 4 ranks in threads: the MindSpore primitives and every all-reduce, checked
demo: $(B)/demo
	$(B)/demo

.PHONY: test-demo
## test-demo: the demo as a test, quiet unless it fails
test-demo: $(B)/demo
	@$(B)/demo >$(B)/demo.log 2>&1 && echo "demo: 1 passed, 0 failed" || { cat $(B)/demo.log; echo "demo: 0 passed, 1 failed"; exit 1; }

EXAMPLES_TARGETS += $(B)/demo

TEST_TARGETS += test-demo
