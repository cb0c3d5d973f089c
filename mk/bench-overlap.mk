# mk/bench-overlap.mk - the caller's computation against the all-reduce it
# overlaps (coll_start / coll_progress / coll_waitall), threads and tcp ports.
#
#   make bench-overlap   markdown table: comm alone, compute alone, sequential,
#                        overlapped, 1 and 16 MiB at 2 and 4 ranks
#                        (BENCH_OVERLAP_ARGS; -k: correctness only)

BENCH_OVERLAP_ARGS ?=

$(B)/bench/overlap: bench/overlap.c coll.h bench/bench_common.h bench/bench_shmctl.h bench/bench_ports.h \
                    $(wildcard ports/coll_threads.h ports/coll_tcp.h)
	@mkdir -p $(@D)
	@echo "  CC  $@" >&2
	@$(CC) $(CFLAGS) $(WARN) -std=c99 -D_GNU_SOURCE \
	    $(if $(wildcard ports/coll_threads.h),-DBENCH_HAVE_THREADS) \
	    $(if $(wildcard ports/coll_tcp.h),-DBENCH_HAVE_TCP) $< -o $@ $(LDLIBS_THREADS)

.PHONY: bench-overlap
## bench-overlap: all-reduce overlapped with computation vs sequential, threads and tcp, 2 and 4 ranks (markdown)
bench-overlap: $(B)/bench/overlap
	@$(B)/bench/overlap $(BENCH_OVERLAP_ARGS)
