# mk/read-path.mk - the path a reader follows from coll_allreduce to the
# port, measured: every function of coll.h one forced-ring all-reduce
# enters, in the order it enters them, with the lines and jumps a reader
# follows (tools/read_path.c, -finstrument-functions).
#
#   make read-path        the table and counts docs/design.md quotes, with
#                         the default checks and with COLL_NO_CHECKS
#   make test-read-path   both runs succeed and their paths reach the ring
#                         schedule and the engine's driver
RP_B     := $(B)/teach
RP_FLAGS := -std=gnu99 -O0 -g -no-pie -finstrument-functions $(WARN) -I.

$(RP_B)/read_path: tools/read_path.c coll.h ports/coll_threads.h
	@mkdir -p $(@D)
	$(CC) $(RP_FLAGS) -o $@ $< $(LDLIBS_THREADS)

$(RP_B)/read_path_plain: tools/read_path.c coll.h ports/coll_threads.h
	@mkdir -p $(@D)
	$(CC) $(RP_FLAGS) -DCOLL_NO_CHECKS -o $@ $< $(LDLIBS_THREADS)

.PHONY: read-path test-read-path
## read-path: [docs] the functions, lines and jumps from coll_allreduce to the port (docs/design.md)
read-path: $(RP_B)/read_path $(RP_B)/read_path_plain
	@echo "== default checks"; $(RP_B)/read_path
	@echo "== COLL_NO_CHECKS"; $(RP_B)/read_path_plain

## test-read-path: the path tool runs both builds and finds the ring schedule and the driver on the path
test-read-path: $(RP_B)/read_path $(RP_B)/read_path_plain
	@for t in read_path read_path_plain; do \
	  $(RP_B)/$$t > $(RP_B)/$$t.txt || { echo "FAIL $$t did not run"; exit 1; }; \
	  for f in coll_allreduce coll__ring_reduce_scatter coll__ring_allgather coll__progress; do \
	    grep -q "\`$$f\`" $(RP_B)/$$t.txt || { echo "FAIL $$t: $$f not on the path"; exit 1; }; done; \
	  grep -q 'functions, .* lines, .* jumps' $(RP_B)/$$t.txt || { echo "FAIL $$t: no counts"; exit 1; }; \
	  ! grep -q '`coll_threads' $(RP_B)/$$t.txt || { echo "FAIL $$t: the port counted"; exit 1; }; \
	done; \
	grep -q coll__agree_source $(RP_B)/read_path.txt || { echo "FAIL: checks' path lacks the agreement layer"; exit 1; }; \
	! grep -q coll__agree_source $(RP_B)/read_path_plain.txt || { echo "FAIL: COLL_NO_CHECKS path has the agreement layer"; exit 1; }; \
	echo "read-path: 2 builds, 16 checks passed, 0 failed"

TEST_TARGETS += test-read-path
