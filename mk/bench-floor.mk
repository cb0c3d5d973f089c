# mk/bench-floor.mk - the memory floor: the direct two-shot all-reduce with
# no library (bench/floor.c; -c adds reduce-scatter and all-gather), and
# coll's shared-memory ports against it.
#
#   make bench-floor       the floor's table: 2 and 4 ranks, 8 B..256 MiB,
#                          medians of 5 runs (BENCH_FLOOR_ARGS: floor's
#                          options, e.g. "-c allreduce,reduce_scatter,allgather")
#   make bench-floor-vs    coll-threads and coll-shm all-reduce against the
#                          floor, in turns in one run (bench/floor.sh;
#                          FLOOR_ROUNDS, FLOOR_SIZES, FLOOR_RANKS)
#   make test-bench-floor  the floor's own check: tiny sizes at 1..5 ranks
#                          against a plain loop (seconds)

BENCH_FLOOR_ARGS ?=

$(B)/bench/floor: bench/floor.c
	@mkdir -p $(@D)
	@echo "  CC  $@" >&2
	@$(CC) $(CFLAGS) $(WARN) -std=c11 $< -o $@ $(LDLIBS_THREADS)

# bench/goals.sh reads the floor's rows too (all three collectives)
bench-bins: $(B)/bench/floor

TEST_TARGETS += test-bench-floor
.PHONY: bench-floor bench-floor-vs test-bench-floor

## bench-floor: the direct all-reduce at the memory floor, no library (2 and 4 ranks, 8 B..256 MiB)
bench-floor: $(B)/bench/floor
	@$(B)/bench/floor $(BENCH_FLOOR_ARGS)

## bench-floor-vs: coll-threads and coll-shm all-reduce against the memory floor, in turns (bench/floor.sh)
bench-floor-vs: $(B)/bench/floor $(B)/bench/bench_coll
	@B=$(B) sh bench/floor.sh

## test-bench-floor: the floor benchmark's result against a plain loop, tiny sizes, 1..5 ranks
test-bench-floor: $(B)/bench/floor
	@$(B)/bench/floor -k
