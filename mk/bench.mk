# Benchmarks side by side with Open MPI, MPICH and Gloo, and the α-β simulator.
#
#   make bench         full table (< 10 min) on stdout and in bench/results/latest.tsv
#   make bench-quick   the short table (< 1 min)
#   make bench-plot    bus bandwidth against size, PNGs in bench/results/
#   make bench-goals   the goals against this machine's own ceilings (memory,
#                      TCP loopback) and Open MPI, measured in one run of three
#                      passes (14-26 min), bench/results/goals.tsv; with
#                      GOALS_TABLES="a.tsv ..." the goals of those tables only
#   make bench-goals-quick  the same run with fewer sizes (1-2 min): all-reduce,
#                      and the window reduce-scatter and all-gather at 8 MiB
#   make bench-auto    AUTO against the fastest forced algorithm, every row
#   make bench-auto-raw every forced algorithm, several passes (~3.5 min each),
#                      bench/results/auto-raw.tsv: what fit-auto reads
#   make fit-auto      AUTO's alpha-beta-gamma fitted to that table (tools/fit_auto.c)
#   make bench-checks  the call checks' cost: off / on / on+CRC (~2 min)
#   make bench-null    coll.h's own ns per call over a port that does nothing
#   make sim           coll's schedules for up to 4096 ranks under an α-β-γ clock
#   make test-bench    a correctness-only pass of the bench and the simulator
#
# Every recipe is silent and build messages go to stderr, so that stdout of
# `make bench` is the table alone. A port or peer that is not there is left
# out of the build and said so on stderr by bench/run.sh.

BENCH_B      := $(B)/bench
BENCH_CFLAGS := $(CFLAGS) $(WARN) -std=c99 -D_GNU_SOURCE
BENCH_HDRS   := coll.h coll_window.h bench/bench_common.h bench/bench_coll.h bench/bench_shmctl.h bench/bench_ports.h
BENCH_PORTS  := $(wildcard ports/coll_threads.h ports/coll_shm.h ports/coll_tcp.h)
BENCH_DEFS   := $(if $(wildcard ports/coll_threads.h),-DBENCH_HAVE_THREADS) \
                $(if $(wildcard ports/coll_shm.h),-DBENCH_HAVE_SHM) \
                $(if $(wildcard ports/coll_tcp.h),-DBENCH_HAVE_TCP)
BENCH_MPICC_OMPI  := $(shell command -v mpicc.openmpi 2>/dev/null)
BENCH_MPICC_MPICH := $(shell command -v mpicc.mpich 2>/dev/null)
BENCH_GLOO        := $(wildcard /usr/include/gloo/allreduce_ring.h)
BENCH_GNUPLOT     := $(shell command -v gnuplot 2>/dev/null)

BENCH_BINS := $(BENCH_B)/bench_coll $(BENCH_B)/membw $(BENCH_B)/sim $(BENCH_B)/nullport \
              $(BENCH_B)/memtraffic
ifneq ($(wildcard ports/coll_tcp.h),)
BENCH_BINS += $(BENCH_B)/tcpstream
endif
ifneq ($(BENCH_MPICC_OMPI),)
BENCH_BINS += $(BENCH_B)/bench_mpi_ompi
endif
ifneq ($(BENCH_MPICC_MPICH),)
BENCH_BINS += $(BENCH_B)/bench_mpi_mpich
endif
ifneq ($(BENCH_GLOO),)
BENCH_BINS += $(BENCH_B)/bench_gloo
endif

TEST_TARGETS += test-bench
.PHONY: bench bench-quick bench-plot bench-goals bench-goals-quick bench-auto bench-auto-raw fit-auto bench-checks bench-null bench-bins sim test-bench
BENCH_TABLES ?= bench/results/latest.tsv

## bench-bins: [internal] build every benchmark program that this machine can build
bench-bins: $(BENCH_BINS)

## bench: full table vs Open MPI, MPICH, Gloo (< 10 min), bench/results/latest.tsv
bench: bench-bins
	@sh bench/run.sh full

## bench-quick: the short benchmark table (< 1 min)
bench-quick: bench-bins
	@sh bench/run.sh quick

$(BENCH_B)/bench_coll: bench/bench_coll.c $(BENCH_HDRS) $(BENCH_PORTS)
	@mkdir -p $(@D)
	@echo "  CC  $@" >&2
	@$(CC) $(BENCH_CFLAGS) $(BENCH_DEFS) $< -o $@ $(LDLIBS_THREADS)

$(BENCH_B)/membw: bench/membw.c bench/bench_common.h
	@mkdir -p $(@D)
	@echo "  CC  $@" >&2
	@$(CC) $(BENCH_CFLAGS) $< -o $@ $(LDLIBS_THREADS)

$(BENCH_B)/memtraffic: bench/memtraffic.c $(BENCH_HDRS) $(BENCH_PORTS)
	@mkdir -p $(@D)
	@echo "  CC  $@" >&2
	@$(CC) $(BENCH_CFLAGS) $(BENCH_DEFS) $< -o $@ $(LDLIBS_THREADS)

$(BENCH_B)/tcpstream: bench/tcpstream.c bench/bench_common.h coll.h ports/coll_tcp.h
	@mkdir -p $(@D)
	@echo "  CC  $@" >&2
	@$(CC) $(BENCH_CFLAGS) $< -o $@

$(BENCH_B)/nullport: bench/nullport.c bench/bench_common.h coll.h
	@mkdir -p $(@D)
	@echo "  CC  $@" >&2
	@$(CC) $(BENCH_CFLAGS) $< -o $@

$(BENCH_B)/sim: bench/sim.c coll.h
	@mkdir -p $(@D)
	@echo "  CC  $@" >&2
	@$(CC) $(BENCH_CFLAGS) $< -o $@ -lm

# coll over the MPI port is measured inside the Open MPI program, in the
# same job as MPI's own collectives.
$(BENCH_B)/bench_mpi_ompi: bench/bench_mpi.c $(BENCH_HDRS) $(wildcard ports/coll_mpi.h)
	@mkdir -p $(@D)
	@echo "  MPICC(openmpi)  $@" >&2
	@mpicc.openmpi $(BENCH_CFLAGS) $(if $(wildcard ports/coll_mpi.h),-DBENCH_COLL_MPI) $< -o $@

$(BENCH_B)/bench_mpi_mpich: bench/bench_mpi.c $(BENCH_HDRS)
	@mkdir -p $(@D)
	@echo "  MPICC(mpich)  $@" >&2
	@mpicc.mpich $(BENCH_CFLAGS) $< -o $@

$(BENCH_B)/bench_gloo: bench/bench_gloo.cc bench/bench_common.h bench/bench_shmctl.h
	@mkdir -p $(@D)
	@echo "  CXX $@" >&2
	@$(CXX) -std=c++17 $(CFLAGS) -Wall -Wextra -Werror $< -o $@ -lgloo $(LDLIBS_THREADS)

## bench-plot: bus bandwidth against size, PNGs in bench/results/ (needs gnuplot)
bench-plot:
	@test -n "$(BENCH_GNUPLOT)" || { echo "bench-plot: gnuplot missing (Debian gnuplot-nox)" >&2; exit 1; }
	@test -f bench/results/latest.tsv || { echo "bench-plot: run make bench (or bench-quick) first" >&2; exit 1; }
	@sh bench/plot.sh bench/results/latest.tsv bench/results

GOALS_TABLES ?=

## bench-goals: the goals against the machine's own ceilings and Open MPI, one run of 3 passes (14-26 min)
bench-goals: $(if $(GOALS_TABLES),,bench-bins)
	@$(if $(GOALS_TABLES),sh bench/goals.sh $(GOALS_TABLES),sh bench/goals.sh run full)

## bench-goals-quick: the same goals from a short run (all-reduce, 5 sizes; window reduce-scatter, all-gather at 8 MiB; 1-2 min)
bench-goals-quick: bench-bins
	@sh bench/goals.sh run quick

## bench-auto: AUTO's time against the fastest forced algorithm for every row of the table
bench-auto:
	@sh bench/auto.sh $(BENCH_TABLES)

FIT_TABLES  ?= bench/results/auto-raw.tsv
FIT_ARGS    ?=
FIT_PASSES  ?= 5

## bench-auto-raw: every forced algorithm, FIT_PASSES passes, bench/results/auto-raw.tsv
bench-auto-raw: bench-bins
	@sh tools/auto_measure.sh $(FIT_PASSES) bench/results/auto-raw.tsv

$(B)/tools/fit_auto: tools/fit_auto.c coll.h bench/bench_common.h bench/bench_coll.h
	@mkdir -p $(@D)
	@echo "  CC  $@" >&2
	@$(CC) $(BENCH_CFLAGS) $< -o $@ -lm

## fit-auto: [bench] fit AUTO's alpha/beta/gamma to FIT_TABLES; default vs fitted picks, every row
fit-auto: $(B)/tools/fit_auto
	@$(B)/tools/fit_auto $(FIT_ARGS) $(FIT_TABLES)

## bench-checks: call checks off / on / on+CRC, threads and shm ports; and tcp with its keyed mode (MAC); 8 B to 8 MiB (markdown)
bench-checks: $(BENCH_B)/bench_coll
	@sh bench/checks.sh

## bench-null: coll.h's own ns per 8 B all-reduce over a port that does nothing
bench-null: $(BENCH_B)/nullport
	@$(BENCH_B)/nullport

# The schedules of every collective at a few rank counts, up to 4096.
# HOSTS=HxL (make sim HOSTS=512x8): the two-level machine instead, H hosts
# of L ranks, each collective flat (host-major and interleaved ranks) and
# as coll_hier.h's phases, the fastest of each form and AUTO's
# (SIM_COLLS, SIM_SIZES; SIM_FLAGS: -intra a,b,g -inter a,b,g, -pairs).
SIM_COLLS ?= allreduce,reduce_scatter,allgather,broadcast,reduce,gather,scatter,alltoall
SIM_SIZES ?= 8,1M
## sim: [bench] coll's schedules for up to 4096 ranks under an alpha-beta-gamma clock; HOSTS=512x8: on H hosts x L ranks
sim: $(BENCH_B)/sim
ifeq ($(strip $(HOSTS)),)
	@$(BENCH_B)/sim -c allreduce -p 2,4,7,64,4095,4096 -n 8,1M,64M
	@$(BENCH_B)/sim -c reduce_scatter,allgather,broadcast,reduce -p 64,4095,4096 -n 8,64M
else
	@$(BENCH_B)/sim -H $(word 1,$(subst x, ,$(HOSTS))) -L $(word 2,$(subst x, ,$(HOSTS))) \
	    -c $(SIM_COLLS) -n $(SIM_SIZES) -best $(SIM_FLAGS)
endif

# Seconds: every collective/algorithm/size cell once on the threads port,
# checked on every rank; every collective over the windows of the threads
# port and of the shm port's heap (coll-shm-win); the simulator's
# self-test and a few rank counts.
## test-bench: every bench cell once, checked, windows rows (threads, shm), and the simulator self-test
test-bench: $(BENCH_B)/bench_coll $(BENCH_B)/sim
	@$(BENCH_B)/bench_coll -k -p threads -n 1,2,3,4,5 -a all -s 4,8,12,1000,65540,300K
	@$(BENCH_B)/bench_coll -k -p threads,shm -n 1,2,3,4 -W 1 -s 4,8,12,1000,65540,300K
	@$(BENCH_B)/sim -t
