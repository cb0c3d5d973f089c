# The MPI and shared-memory-processes ports, their tests, and two seed
# programs (MindSpore's four primitives under mpirun; the numpy ring
# simulation). Open MPI runs as root need --allow-run-as-root, and more ranks
# than cores need --oversubscribe. MPICH busy-polls when oversubscribed, so
# its runs are kept small.
PMS           := $(B)/ports-mpi-shm
MPICC_OMPI    ?= mpicc.openmpi
MPIRUN_OMPI   ?= mpirun.openmpi
MPICC_MPICH   ?= mpicc.mpich
MPIRUN_MPICH  ?= mpirun.mpich
OMPI_FLAGS    := --allow-run-as-root --oversubscribe --mca pml ob1 --mca btl self,vader
PMS_HDRS      := coll.h ports/coll_mpi.h
SHM_HDRS      := coll.h ports/coll_shm.h ports/coll_template.h

# A missing MPI is a skip outside CI and a failure under CI=true.
define pms_need
	@if ! command -v $(1) >/dev/null 2>&1; then \
	  if [ "$$CI" = true ]; then echo "$(1) not found (CI): failing"; exit 1; fi; \
	  echo "*** SKIPPED: $(1) not found - install openmpi-bin libopenmpi-dev mpich libmpich-dev ***"; \
	  exit 0; fi
endef

$(PMS)/test_shm: test/test_shm.c $(SHM_HDRS) | $(B)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -I. -o $@ $< $(LDLIBS_THREADS)

$(PMS)/seed_ring_sim: examples/seed_ring_sim.c coll.h ports/coll_mailbox.h | $(B)
	@mkdir -p $(@D)
	$(CC) -std=c99 $(CFLAGS) $(WARN) -I. -o $@ $<

$(PMS)/test_mpi.ompi: test/test_mpi.c test/test_shm.c $(PMS_HDRS) | $(B)
	@mkdir -p $(@D)
	$(MPICC_OMPI) $(CFLAGS) $(WARN) -I. -o $@ $<

# the same program with tiny MPI message limits, to exercise the cutting
# of messages larger than one MPI count
$(PMS)/test_mpi_split.ompi: test/test_mpi.c test/test_shm.c $(PMS_HDRS) | $(B)
	@mkdir -p $(@D)
	$(MPICC_OMPI) $(CFLAGS) $(WARN) -DCOLL_MPI_MAX_COUNT=1000 -DCOLL_MPI_BLOCK=96 -I. -o $@ $<

$(PMS)/test_mpi.mpich: test/test_mpi.c test/test_shm.c $(PMS_HDRS) | $(B)
	@mkdir -p $(@D)
	$(MPICC_MPICH) $(CFLAGS) $(WARN) -I. -o $@ $<

$(PMS)/seed_mindspore.ompi: examples/seed_mindspore.c $(PMS_HDRS) | $(B)
	@mkdir -p $(@D)
	$(MPICC_OMPI) $(CFLAGS) $(WARN) -I. -o $@ $<

$(PMS)/seed_mindspore.mpich: examples/seed_mindspore.c $(PMS_HDRS) | $(B)
	@mkdir -p $(@D)
	$(MPICC_MPICH) $(CFLAGS) $(WARN) -I. -o $@ $<

.PHONY: seed-mindspore seed-ring-sim test-mpi test-shm seed-mindspore-test \
        seed-ring-sim-test examples-ports-mpi-shm

# mpirun -np 4 as the seed does; rank 0 prints the four results
seed-mindspore:
	$(call pms_need,$(MPICC_OMPI))
	@if command -v $(MPICC_OMPI) >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory $(PMS)/seed_mindspore.ompi && \
	  $(MPIRUN_OMPI) $(OMPI_FLAGS) -np 4 $(PMS)/seed_mindspore.ompi; fi

seed-ring-sim: $(PMS)/seed_ring_sim
	$(PMS)/seed_ring_sim

test-shm: $(PMS)/test_shm
	$(PMS)/test_shm

test-mpi:
	$(call pms_need,$(MPICC_OMPI))
	$(call pms_need,$(MPICC_MPICH))
	@if command -v $(MPICC_OMPI) >/dev/null 2>&1 && command -v $(MPICC_MPICH) >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory $(PMS)/test_mpi.ompi $(PMS)/test_mpi_split.ompi $(PMS)/test_mpi.mpich && \
	  $(MPIRUN_OMPI) $(OMPI_FLAGS) -np 4 $(PMS)/test_mpi.ompi openmpi && \
	  $(MPIRUN_OMPI) $(OMPI_FLAGS) -np 4 $(PMS)/test_mpi_split.ompi openmpi-split quick && \
	  $(MPIRUN_MPICH) -np 4 $(PMS)/test_mpi.mpich mpich quick; fi

# The seeds as tests: the exact output, and the programs' own checks.
seed-mindspore-test:
	$(call pms_need,$(MPICC_OMPI))
	$(call pms_need,$(MPICC_MPICH))
	@if command -v $(MPICC_OMPI) >/dev/null 2>&1 && command -v $(MPICC_MPICH) >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory $(PMS)/seed_mindspore.ompi $(PMS)/seed_mindspore.mpich && \
	  sh test/seed_mindspore_check.sh "$(MPIRUN_OMPI) $(OMPI_FLAGS)" $(PMS)/seed_mindspore.ompi openmpi && \
	  sh test/seed_mindspore_check.sh "$(MPIRUN_MPICH)" $(PMS)/seed_mindspore.mpich mpich; fi

seed-ring-sim-test: $(PMS)/seed_ring_sim
	$(PMS)/seed_ring_sim --check

examples-ports-mpi-shm: $(PMS)/seed_ring_sim
	@if command -v $(MPICC_OMPI) >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory $(PMS)/seed_mindspore.ompi; \
	else echo "*** $(MPICC_OMPI) not found: seed_mindspore not built ***"; fi

EXAMPLES_TARGETS += examples-ports-mpi-shm
TEST_TARGETS += test-shm test-mpi seed-mindspore-test seed-ring-sim-test
