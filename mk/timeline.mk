# mk/timeline.mk - failures explained: every rank's flight recorder merged
# into one timeline (tools/timeline.c): Chrome/Perfetto trace JSON and one
# HTML page, a lane per rank beside the schedule's diagram; with each
# rank's observer events beside its record, every step and message too.
#
#   make timeline COLL=allreduce ALGO=ring P=4 PORT=threads|shm|tcp N=1000 [CALLS=4 FAIL=rank DEADLINE=ms]
#                      a real run (test/timeline_run.c), each rank's
#                      coll_dump in build/timeline/rank<i>.txt, its
#                      observer's events in rank<i>.events (and
#                      coll_describe's steps in rank<i>.schedule), then the
#                      tool: build/timeline/trace.json and index.html
#   make test-timeline the runs over the threads, shm and TCP ports (steps
#                      and messages against coll_describe, every send
#                      matched), a rank that skips its last call, malformed
#                      records and events, bad names; the page in headless
#                      Chromium
#   build/teach/timeline -o DIR rank0.txt rank1.txt ...   any coll_dump files
#                      (COLL_MPI_RECORD's, COLL_TORCH_RECORD's), each
#                      X.txt's X.events read too where there is one
TL_B := $(B)/timeline

$(TEACH_B)/timeline: tools/timeline.c tools/diagrams.c $(TEACH_HDRS)
	@mkdir -p $(@D)
	$(CC) $(TEACH_CFLAGS) -o $@ $< -lm

$(TEACH_B)/timeline_run: test/timeline_run.c coll.h ports/coll_threads.h ports/coll_shm.h ports/coll_tcp.h
	@mkdir -p $(@D)
	$(CC) -std=c99 $(CFLAGS) $(WARN) -I. -o $@ $< $(LDLIBS_THREADS) -lrt

TL_ARGS = $(if $(COLL),coll=$(COLL)) $(if $(ALGO),algo=$(ALGO)) $(if $(P),p=$(P)) $(if $(PORT),port=$(PORT)) \
          $(if $(N),n=$(N)) $(if $(CALLS),calls=$(CALLS)) $(if $(FAIL),fail=$(FAIL)) $(if $(DEADLINE),deadline=$(DEADLINE))

.PHONY: timeline test-timeline
## timeline: [docs] a real run of any collective (COLL= ALGO= P= PORT=threads|shm|tcp N= CALLS= FAIL=) drawn from the flight recorders and the observer (every step and message): build/timeline/index.html and trace.json
timeline: $(TEACH_B)/timeline $(TEACH_B)/timeline_run
	@rm -rf $(TL_B) && mkdir -p $(TL_B)
	@$(TEACH_B)/timeline_run $(TL_ARGS) out=$(TL_B); rc=$$?; [ $$rc -ne 2 ] || exit 2; \
	    $(TEACH_B)/timeline -o $(TL_B) $(TL_B)/rank*.txt || exit 1; exit $$rc

## test-timeline: timelines of real runs over the threads, shm and TCP ports checked against the recorders' files and coll_describe (steps, messages, matching); a failing rank; malformed input; the page in headless Chromium
test-timeline: $(TEACH_B)/timeline $(TEACH_B)/timeline_run
	@if command -v python3 >/dev/null; then \
	    timeout 300 python3 test/test_timeline.py $(TEACH_B)/timeline_run $(TEACH_B)/timeline $(B)/testlogs/timeline; \
	elif [ "$$CI" = true ]; then echo "python3 not found (CI): failing"; echo "timeline: 0 passed, 1 failed"; exit 1; \
	else echo "*** SKIPPED test-timeline: python3 not found ***"; echo "timeline: 0 passed, 0 failed"; fi

TEST_TARGETS += test-timeline
EXAMPLES_TARGETS += $(TEACH_B)/timeline
