# mk/mpi-drop-in.mk - the MPI drop-in (mpi/): a PMPI library per MPI that
# runs an unchanged MPI program's collectives through coll, its suite, its
# benchmark and the tuning run that makes its thresholds.
#
#   make mpi-drop-in          build/lib/libcoll_mpi_openmpi.so, libcoll_mpi_mpich.so
#   make test-mpi-drop-in     the suite (mpi/test_drop_in.sh), both MPIs, 1-8 ranks, fake hosts
#   make bench-mpi-drop-in    plain MPI vs preloaded, both MPIs, 2 and 4 ranks
#   make mpi-drop-in-tune     measure and rewrite mpi/thresholds_*.h
#   make mpi-tune             calibrate on this machine: a thresholds file the library
#                             reads at MPI_Init (MPI=openmpi|mpich, NP="2 4", TUNE_DIR, TUNE_ARGS)
#   make test-mpi-tune        the calibration's test (mpi/test_tune.sh), both MPIs, 2 ranks
#
# The two MPIs differ in ABI, so each gets its own library, built by its own
# mpicc. Names are this fragment's own (it is read before mk/ports-mpi.mk).
DI_B         := $(B)/mpi
DI_LIB       := $(B)/lib
DI_MPICC_OMPI  ?= mpicc.openmpi
DI_MPICC_MPICH ?= mpicc.mpich
DI_SO_FLAGS  := -O2 -g -std=gnu99 -shared -fPIC -fvisibility=hidden
DI_DEPS      := mpi/coll_mpi_drop_in.c coll.h coll_hier.h ports/coll_mpi.h ports/coll_shm.h
DI_HAVE_MPI  := $(and $(shell command -v $(DI_MPICC_OMPI)),$(shell command -v $(DI_MPICC_MPICH)))
DI_LIBS      := $(DI_LIB)/libcoll_mpi_openmpi.so $(DI_LIB)/libcoll_mpi_mpich.so
DI_PROGS     := $(foreach m,ompi mpich,$(DI_B)/test_drop_in.$(m) $(DI_B)/test_agree.$(m) $(DI_B)/seed_mindspore_mpi.$(m) \
                  $(DI_B)/bench_drop_in.$(m) $(DI_B)/seed_mindspore_linked.$(m))
DI_TUNERS    := $(DI_B)/coll_mpi_tune.ompi $(DI_B)/coll_mpi_tune.mpich
# make mpi-tune: which MPIs and rank counts; TUNE_DIR: the files go to
# TUNE_DIR/mpi-thresholds-<mpi> instead of the path the library reads by
# default ($$XDG_CONFIG_HOME/coll/..., else $$HOME/.config/coll/...)
DI_TUNE_MPI  = $(or $(MPI),openmpi mpich)
DI_TUNE_NP   = $(or $(NP),2 4)

$(DI_LIB)/libcoll_mpi_openmpi.so: $(DI_DEPS) mpi/thresholds_openmpi.h | $(B)
	@mkdir -p $(@D)
	$(DI_MPICC_OMPI) $(DI_SO_FLAGS) $(WARN) -o $@ mpi/coll_mpi_drop_in.c -lm

$(DI_LIB)/libcoll_mpi_mpich.so: $(DI_DEPS) mpi/thresholds_mpich.h | $(B)
	@mkdir -p $(@D)
	$(DI_MPICC_MPICH) $(DI_SO_FLAGS) $(WARN) -o $@ mpi/coll_mpi_drop_in.c -lm

# the programs are MPI programs only: nothing of coll is compiled into them
$(DI_B)/%.ompi: mpi/%.c mpi/bench_calls.h | $(B)
	@mkdir -p $(@D)
	$(DI_MPICC_OMPI) $(CFLAGS) $(WARN) -o $@ $<

$(DI_B)/%.mpich: mpi/%.c mpi/bench_calls.h | $(B)
	@mkdir -p $(@D)
	$(DI_MPICC_MPICH) $(CFLAGS) $(WARN) -o $@ $<

# the seed linked before the MPI library instead of preloaded
$(DI_B)/seed_mindspore_linked.ompi: mpi/seed_mindspore_mpi.c $(DI_LIB)/libcoll_mpi_openmpi.so | $(B)
	@mkdir -p $(@D)
	$(DI_MPICC_OMPI) $(CFLAGS) $(WARN) -o $@ $< -L$(DI_LIB) -Wl,-rpath,$(abspath $(DI_LIB)) -lcoll_mpi_openmpi

$(DI_B)/seed_mindspore_linked.mpich: mpi/seed_mindspore_mpi.c $(DI_LIB)/libcoll_mpi_mpich.so | $(B)
	@mkdir -p $(@D)
	$(DI_MPICC_MPICH) $(CFLAGS) $(WARN) -o $@ $< -L$(DI_LIB) -Wl,-rpath,$(abspath $(DI_LIB)) -lcoll_mpi_mpich

.PHONY: mpi-drop-in test-mpi-drop-in bench-mpi-drop-in mpi-drop-in-tune mpi-tune test-mpi-tune bench-mpi-drop-in-calibrated

ifneq ($(DI_HAVE_MPI),)
## mpi-drop-in: [run] the PMPI libraries build/lib/libcoll_mpi_openmpi.so and libcoll_mpi_mpich.so
mpi-drop-in: $(DI_LIBS)

## test-mpi-drop-in: MPI-only programs under mpirun with the drop-in preloaded and verify on (Open MPI, MPICH, 1-8 ranks)
test-mpi-drop-in: $(DI_LIBS) $(DI_PROGS) $(B)/ports-mpi-shm/seed_mindspore.ompi
	@bash mpi/test_drop_in.sh $(B)

## bench-mpi-drop-in: allreduce/bcast/allgather 8 B-64 MiB, plain MPI vs the drop-in preloaded, both MPIs, 2 and 4 ranks
bench-mpi-drop-in: $(DI_LIBS) $(DI_PROGS)
	@bash mpi/bench_drop_in.sh $(B) bench

## mpi-drop-in-tune: [bench] time every routed collective plain and through coll, rewrite mpi/thresholds_*.h from it
mpi-drop-in-tune: $(DI_LIBS) $(DI_PROGS)
	@bash mpi/bench_drop_in.sh $(B) tune

## mpi-tune: [run] calibrate the drop-in here: each collective and size, the MPI's own against coll's; writes the file the library reads at MPI_Init
mpi-tune: $(DI_LIBS) $(DI_TUNERS)
	@bash mpi/test_tune.sh $(B) tune "$(DI_TUNE_MPI)" "$(DI_TUNE_NP)" "$(TUNE_DIR)" $(TUNE_ARGS)

## test-mpi-tune: the calibration at small sizes on 2 ranks, both MPIs: its file, the drop-in routing exactly where it says, a malformed file's error
test-mpi-tune: $(DI_LIBS) $(DI_TUNERS) $(DI_B)/bench_drop_in.ompi $(DI_B)/bench_drop_in.mpich
	@bash mpi/test_tune.sh $(B) test

## bench-mpi-drop-in-calibrated: calibrate into build/mpi/calibrated, then plain MPI against preloaded with that file, both MPIs, 2 and 4 ranks
bench-mpi-drop-in-calibrated: $(DI_LIBS) $(DI_PROGS) $(DI_TUNERS)
	@bash mpi/test_tune.sh $(B) tune "openmpi mpich" "2 4" $(B)/mpi/calibrated $(TUNE_ARGS)
	@bash mpi/bench_drop_in.sh $(B) calibrated $(B)/mpi/calibrated
else
mpi-drop-in test-mpi-drop-in bench-mpi-drop-in mpi-drop-in-tune mpi-tune test-mpi-tune bench-mpi-drop-in-calibrated:
	@if [ "$$CI" = true ]; then echo "$(DI_MPICC_OMPI) or $(DI_MPICC_MPICH) not found (CI): failing"; exit 1; fi
	@echo "*** SKIPPED $@: $(DI_MPICC_OMPI) or $(DI_MPICC_MPICH) not found (apt-get install openmpi-bin libopenmpi-dev mpich libmpich-dev) ***"
endif

TEST_TARGETS += test-mpi-drop-in test-mpi-tune
