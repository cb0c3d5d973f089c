# mk/bench-scratch.mk - all-reduce time against scratch size, the README's
# scratch table: 2 thread ranks (ports/coll_threads.h).
#
#   make bench-scratch   1 MiB all-reduce, 7 runs at each scratch size
#                        (BENCH_SCRATCH_ARGS: bytes, runs, scratch sizes)

# bytes, runs, then the scratch sizes
BENCH_SCRATCH_ARGS ?= 1048576 7 32 256 4096 16384 65536 262144 1048576

$(B)/bench/scratch_size: bench/scratch_size.c coll.h ports/coll_threads.h
	@mkdir -p $(@D)
	$(CC) -std=c99 $(CFLAGS) $(WARN) $< -o $@ $(LDLIBS_THREADS)

.PHONY: bench-scratch
## bench-scratch: 1 MiB all-reduce time against scratch size, 2 thread ranks (BENCH_SCRATCH_ARGS)
bench-scratch: $(B)/bench/scratch_size
	@$(B)/bench/scratch_size $(BENCH_SCRATCH_ARGS)
