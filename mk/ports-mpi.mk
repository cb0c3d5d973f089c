# mk/ports-mpi.mk - the MPI port (ports/coll_mpi.h), its test and the
# MindSpore seed (its four primitives under mpirun).
#
#   make test-mpi              the port under Open MPI (also with tiny
#                              message limits) and MPICH
#   make seed-mindspore        the seed under mpirun -np 4 (Open MPI)
#   make seed-mindspore-test   the seed under both MPIs, output checked
#
# Open MPI as root needs --allow-run-as-root, and more ranks than cores
# needs --oversubscribe. MPICH busy-polls when oversubscribed, so its runs
# are kept small and use the port's yield mode. Outputs under
# $(B)/ports-mpi-shm/ (shared with mk/ports-shm.mk and the ring simulation
# seed of mk/ports-threads.mk).
PMS           := $(B)/ports-mpi-shm
MPICC_OMPI    ?= mpicc.openmpi
MPIRUN_OMPI   ?= mpirun.openmpi
MPICC_MPICH   ?= mpicc.mpich
MPIRUN_MPICH  ?= mpirun.mpich
OMPI_FLAGS    := --allow-run-as-root --oversubscribe --mca pml ob1 --mca btl self,vader
PMS_MPI_HDRS  := coll.h ports/coll_mpi.h test/check_port.h test/coll_test.h test/test_values.h

# Both MPIs present? Without them a target skips loudly - or fails under CI.
PMS_HAVE_MPI := $(and $(shell command -v $(MPICC_OMPI)),$(shell command -v $(MPICC_MPICH)))
define pms_no_mpi
	@if [ "$$CI" = true ]; then echo "$(MPICC_OMPI) or $(MPICC_MPICH) not found (CI): failing"; exit 1; fi
	@echo "*** SKIPPED $@: $(MPICC_OMPI) or $(MPICC_MPICH) not found (apt-get install openmpi-bin libopenmpi-dev mpich libmpich-dev) ***"
endef

$(PMS)/test_mpi.ompi: test/test_mpi.c $(PMS_MPI_HDRS) | $(B)
	@mkdir -p $(@D)
	$(MPICC_OMPI) $(CFLAGS) $(WARN) -I. -o $@ $<

# the same program with tiny MPI message limits, to exercise the cutting of
# messages larger than one MPI count (INT_MAX bytes by default)
$(PMS)/test_mpi_split.ompi: test/test_mpi.c $(PMS_MPI_HDRS) | $(B)
	@mkdir -p $(@D)
	$(MPICC_OMPI) $(CFLAGS) $(WARN) -DCOLL_MPI_MAX_COUNT=1000 -DCOLL_MPI_BLOCK=96 -I. -o $@ $<

$(PMS)/test_mpi.mpich: test/test_mpi.c $(PMS_MPI_HDRS) | $(B)
	@mkdir -p $(@D)
	$(MPICC_MPICH) $(CFLAGS) $(WARN) -I. -o $@ $<

$(PMS)/test_mpi_late.ompi: test/test_mpi_late.c coll.h ports/coll_mpi.h test/coll_test.h | $(B)
	@mkdir -p $(@D)
	$(MPICC_OMPI) $(CFLAGS) $(WARN) -I. -o $@ $<

$(PMS)/test_mpi_late.mpich: test/test_mpi_late.c coll.h ports/coll_mpi.h test/coll_test.h | $(B)
	@mkdir -p $(@D)
	$(MPICC_MPICH) $(CFLAGS) $(WARN) -I. -o $@ $<

$(PMS)/seed_mindspore.ompi: examples/seed_mindspore.c coll.h ports/coll_mpi.h | $(B)
	@mkdir -p $(@D)
	$(MPICC_OMPI) $(CFLAGS) $(WARN) -I. -o $@ $<

$(PMS)/seed_mindspore.mpich: examples/seed_mindspore.c coll.h ports/coll_mpi.h | $(B)
	@mkdir -p $(@D)
	$(MPICC_MPICH) $(CFLAGS) $(WARN) -I. -o $@ $<

.PHONY: seed-mindspore test-mpi test-mpi-late seed-mindspore-test examples-ports-mpi-shm

# rank 0's result lines (those starting "[" or " [") exactly: numpy's print of the four results
PMS_MINDSPORE_EXPECT := [[6.]]\n[[0.]\n [1.]\n [2.]\n [3.]]\n[[0.]]\n[[0]]
# $(1) mpirun and flags, $(2) program, $(3) name: the output, the exit status
# (every rank's own check) and a "name: N passed, N failed" line
define pms_seed_run
	@out=$$($(1) -np 4 $(2)); rc=$$?; exp=$$(printf '$(PMS_MINDSPORE_EXPECT)'); \
	printf '%s\n' "$$out"; res=$$(printf '%s\n' "$$out" | grep -E '^ ?\['); \
	if [ $$rc -eq 0 ] && [ "$$res" = "$$exp" ]; then echo "mindspore-$(3): 1 passed, 0 failed"; \
	else echo "mindspore-$(3): output or exit status ($$rc) wrong"; \
	     echo "mindspore-$(3): 0 passed, 1 failed"; exit 1; fi
endef

ifneq ($(PMS_HAVE_MPI),)
# mpirun -np 4 as the seed does (Open MPI, oversubscribed, as root)
## seed-mindspore: [run] MindSpore's four primitives under mpirun -np 4 (Open MPI)
seed-mindspore: $(PMS)/seed_mindspore.ompi
	$(MPIRUN_OMPI) $(OMPI_FLAGS) -np 4 $<

## seed-mindspore-test: the MindSpore seed under Open MPI and MPICH, output checked
seed-mindspore-test: $(PMS)/seed_mindspore.ompi $(PMS)/seed_mindspore.mpich
	$(call pms_seed_run,$(MPIRUN_OMPI) $(OMPI_FLAGS),$(PMS)/seed_mindspore.ompi,openmpi)
	$(call pms_seed_run,$(MPIRUN_MPICH),$(PMS)/seed_mindspore.mpich,mpich)

## test-mpi: the MPI port under Open MPI (also with tiny message limits) and MPICH
test-mpi: $(PMS)/test_mpi.ompi $(PMS)/test_mpi_split.ompi $(PMS)/test_mpi.mpich
	$(MPIRUN_OMPI) $(OMPI_FLAGS) -np 4 $(PMS)/test_mpi.ompi openmpi
	$(MPIRUN_OMPI) $(OMPI_FLAGS) -np 4 $(PMS)/test_mpi_split.ompi openmpi-split quick
	$(MPIRUN_MPICH) -np 4 $(PMS)/test_mpi.mpich mpich quick yield

## test-mpi-late: after a timeout no receive the collective left posted lands later in the caller's buffer (Open MPI and MPICH, 2 ranks)
test-mpi-late: $(PMS)/test_mpi_late.ompi $(PMS)/test_mpi_late.mpich
	$(MPIRUN_OMPI) $(OMPI_FLAGS) -np 2 $(PMS)/test_mpi_late.ompi
	UCX_LOG_LEVEL=error $(MPIRUN_MPICH) -np 2 $(PMS)/test_mpi_late.mpich   # the late messages it cancels: no warnings

## examples-ports-mpi-shm: [internal] build the ring simulation and MindSpore seeds
examples-ports-mpi-shm: $(PMS)/seed_ring_sim $(PMS)/seed_mindspore.ompi
else
seed-mindspore seed-mindspore-test test-mpi test-mpi-late:
	$(pms_no_mpi)
examples-ports-mpi-shm: $(PMS)/seed_ring_sim
	@echo "*** MPI not found: seed_mindspore not built ***"
endif

EXAMPLES_TARGETS += examples-ports-mpi-shm
TEST_TARGETS += test-mpi test-mpi-late seed-mindspore-test
