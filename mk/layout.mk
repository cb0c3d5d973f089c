# mk/layout.mk - layout conversion (split / broadcast / partial-sum tensors,
# coll_layout_*), over the threads port.
#
#   make test-layout      every layout conversion against a one-rank reference
#
# Output: $(B)/tcp/test_layout (where it has always been built).
LAYOUT_B      := $(B)/tcp
LAYOUT_CFLAGS := -std=c99 -D_POSIX_C_SOURCE=200809L $(CFLAGS) $(WARN) -I.

$(LAYOUT_B)/test_layout: test/test_layout.c coll.h coll_layout.h ports/coll_threads.h
	@mkdir -p $(@D)
	$(CC) $(LAYOUT_CFLAGS) -o $@ $< $(LDLIBS_THREADS)

.PHONY: test-layout
## test-layout: every layout conversion against a one-rank reference
test-layout: $(LAYOUT_B)/test_layout
	@timeout 120 $(LAYOUT_B)/test_layout

TEST_TARGETS += test-layout
