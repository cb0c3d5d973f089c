# mk/ports-shm.mk - the shared-memory processes port (ports/coll_shm.h) and
# the template port (ports/coll_template.h), which its test also runs.
#
#   make test-shm     forked ranks: the port alone, the port checker
#                     (test/check_port.h) at 2, 3, 4 and 7 processes, by
#                     staging and by CMA, stripped to blocking calls, killed
#                     and hung peers, ranks joined by name, the template
#                     port over socketpairs; then the segment forged by a
#                     rogue member (test_shm_rogue.c), also under ASan and
#                     UBSan; the port checks and collectives on every road
#                     irecv_fold (zero-copy reduce) folds from, under them too
#   make test-shm-room  a /dev/shm too small for the segment (a private tmpfs
#                     in a private mount namespace; root): COLL_ERR_NOSPC on
#                     every rank with both sizes, never a SIGBUS
#
# Outputs under $(B)/ports-mpi-shm/ (where they have always been built).
SHM_B    := $(B)/ports-mpi-shm
SHM_HDRS := coll.h ports/coll_shm.h ports/coll_template.h test/check_port.h \
            test/coll_test.h test/test_values.h

$(SHM_B)/test_shm: test/test_shm.c $(SHM_HDRS) | $(B)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -I. -o $@ $<

# the shm port against a segment it cannot trust (forged slots, counters,
# failed word, pids; squatted and stale names), also under ASan and UBSan
SHM_SAN := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
$(SHM_B)/test_shm_rogue: test/test_shm_rogue.c coll.h ports/coll_shm.h | $(B)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -I. -o $@ $<

$(SHM_B)/asan/test_shm_rogue: test/test_shm_rogue.c coll.h ports/coll_shm.h | $(B)
	@mkdir -p $(@D)
	$(CC) $(SHM_SAN) $(WARN) -I. -o $@ $<

# folds straight from the segment's lines and slots: under ASan and UBSan
$(SHM_B)/asan/test_shm: test/test_shm.c $(SHM_HDRS) | $(B)
	@mkdir -p $(@D)
	$(CC) $(SHM_SAN) $(WARN) -I. -o $@ $<

.PHONY: test-shm
## test-shm: the shared-memory port: forked ranks, collectives, dead peers
test-shm: $(SHM_B)/test_shm $(SHM_B)/test_shm_rogue $(SHM_B)/asan/test_shm_rogue \
          $(SHM_B)/asan/test_shm
	$(SHM_B)/test_shm
	$(SHM_B)/test_shm_rogue
	$(SHM_B)/asan/test_shm_rogue
	$(SHM_B)/asan/test_shm fold

TEST_TARGETS += test-shm

# /dev/shm too small: needs root for its private mount namespace (skipped
# loudly without, a failure under CI=true)
$(SHM_B)/test_shm_room: test/test_shm_room.c coll.h ports/coll_shm.h | $(B)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -I. -o $@ $< -lrt

.PHONY: test-shm-room
## test-shm-room: the shm port on a /dev/shm too small for its segment: an error on every rank, no SIGBUS
test-shm-room: $(SHM_B)/test_shm_room
	@timeout 120 $<

TEST_TARGETS += test-shm-room
