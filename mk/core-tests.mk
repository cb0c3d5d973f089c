# mk/core-tests.mk - the core test matrix, error handling, tuning, traffic
# against the cost formulas, compile checks and sanitizers, all over the
# threads port (ports/coll_threads.h).
#
#   make test-core      the matrix (test/test_core.c), -O2; COLL_TEST_LEVEL=2
#                       for the long version
#   make test-memops-host  with memops, coll.h never touches a buffer itself
#   make test-errors    invalid arguments, lost peers, abort (test_errors.c)
#   make test-checks    the call checks: disagreements, refusals, damage
#   make test-groups    alltoallv, sub-communicators, requests in flight
#   make test-displs    the v forms with displacements (gaps, reversed order)
#   make test-max-bytes a port that carries at most 1, 8 or 64 bytes a message
#   make test-identity  a message is taken only by its own call: two
#                       communicators on one port, a replaying link,
#                       exactly coll_scratch_bytes of scratch
#   make test-persistent calls prepared once (coll_prepare) and run many
#                       times (coll_restart), and the core matrix so
#   make test-tune      coll_tune, coll_set_tuning and coll_add_rule
#   make traffic        measured bytes and rounds of every algorithm against
#                       its formula, TSV (make test-traffic: as a test)
#   make test-compile   C99/C11/C++11/C++17 with gcc and clang, two static
#                       copies in one program, C89 declarations
#   make test-asan      matrix (quick level) + errors under ASan and UBSan
#   make test-tsan      matrix (quick level) + errors under TSan
#   make test-fuzz      libFuzzer over the public API (FUZZ_SECONDS)
#
# Outputs under $(B)/core/ (traffic: $(B)/).

CT       := $(B)/core
CT_POSIX := -D_POSIX_C_SOURCE=200809L -DCOLL_DEBUG   # COLL_DEBUG: coll.h asserts its invariants
CT_DEPS  := coll.h coll_layout.h ports/coll_threads.h test/coll_test.h test/test_ports.h test/test_checks.c test/test_values.h test/test_clock.h
CT_ASAN  := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
CT_TSAN  := -O1 -g -fsanitize=thread

$(CT)/test_core: test/test_core.c $(CT_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=c99 $(CT_POSIX) $(CFLAGS) $(WARN) -o $@ $< $(LDLIBS_THREADS)

# the same matrix with the executor's non-blocking path left out
$(CT)/test_core_blocking: test/test_core.c $(CT_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=c99 $(CT_POSIX) -DCOLL_NO_NONBLOCKING $(CFLAGS) $(WARN) -o $@ $< $(LDLIBS_THREADS)

# the same matrix with every wait of the threads port past its polls
# sleeping, never yielding (a yield of any length counts as long: the
# road a rank takes once another program holds its CPU, WAITING)
$(CT)/test_core_calm: test/test_core.c $(CT_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=c99 $(CT_POSIX) -DCOLL_THREADS_YIELD_US=0 $(CFLAGS) $(WARN) -o $@ $< $(LDLIBS_THREADS)
$(CT)/tsan/test_core_calm: test/test_core.c $(CT_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=c99 $(CT_POSIX) -DCOLL_THREADS_YIELD_US=0 $(CT_TSAN) $(WARN) -o $@ $< $(LDLIBS_THREADS)

# the same matrix in the firmware profiles' builds (mk/baremetal.mk): what
# the masks keep must run and pass, what they leave out must answer NOSYS
$(CT)/test_core_profile_core: test/test_core.c $(CT_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=c99 $(CT_POSIX) $(BM_CORE_DEFS) $(CFLAGS) $(WARN) -o $@ $< $(LDLIBS_THREADS)
$(CT)/test_core_profile_checks: test/test_core.c $(CT_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=c99 $(CT_POSIX) $(BM_CORE_CHECKS_DEFS) $(CFLAGS) $(WARN) -o $@ $< $(LDLIBS_THREADS)
$(CT)/test_core_profile_min: test/test_core.c $(CT_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=c99 $(CT_POSIX) $(BM_MIN_DEFS) $(CFLAGS) $(WARN) -o $@ $< $(LDLIBS_THREADS)

$(CT)/test_memops_host: test/test_memops_host.c coll.h ports/coll_mailbox.h
	@mkdir -p $(@D)
	$(CC) -std=c99 -DCOLL_DEBUG $(CFLAGS) $(WARN) -I. -o $@ $<

$(CT)/test_errors: test/test_errors.c $(CT_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=c99 $(CT_POSIX) $(CFLAGS) $(WARN) -o $@ $< $(LDLIBS_THREADS)

$(CT)/test_checks: test/test_checks.c $(CT_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=c99 $(CT_POSIX) $(CFLAGS) $(WARN) -o $@ $< $(LDLIBS_THREADS) -lm

$(CT)/test_groups: test/test_groups.c $(CT_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=c99 $(CT_POSIX) $(CFLAGS) $(WARN) -o $@ $< $(LDLIBS_THREADS)

$(CT)/test_max_bytes: test/test_max_bytes.c $(CT_DEPS) test/check_port.h
	@mkdir -p $(@D)
	$(CC) -std=c99 $(CT_POSIX) $(CFLAGS) $(WARN) -o $@ $< $(LDLIBS_THREADS) -lm

$(CT)/test_displs: test/test_displs.c $(CT_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=c99 $(CT_POSIX) $(CFLAGS) $(WARN) -o $@ $< $(LDLIBS_THREADS)

$(CT)/test_identity: test/test_identity.c $(CT_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=c99 $(CT_POSIX) $(CFLAGS) $(WARN) -o $@ $< $(LDLIBS_THREADS)

$(CT)/test_persistent: test/test_persistent.c $(CT_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=c99 $(CT_POSIX) $(CFLAGS) $(WARN) -o $@ $< $(LDLIBS_THREADS)

$(CT)/asan/%: test/%.c $(CT_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=c99 $(CT_POSIX) $(CT_ASAN) $(WARN) -o $@ $< $(LDLIBS_THREADS) -lm

$(CT)/tsan/%: test/%.c $(CT_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=c99 $(CT_POSIX) $(CT_TSAN) $(WARN) -o $@ $< $(LDLIBS_THREADS) -lm

.PHONY: test-core test-memops-host test-errors test-compile test-asan test-tsan test-groups test-identity test-displs test-max-bytes test-persistent
## test-core: the core matrix over the threads port (COLL_TEST_LEVEL=2: long); at level 0 with the call checks off, with COLL_NO_NONBLOCKING and in the core, core-with-call-checks (COLL_NO_CRC) and minimal firmware profiles
test-core: $(CT)/test_core $(CT)/test_core_blocking $(CT)/test_core_calm $(CT)/test_core_profile_core $(CT)/test_core_profile_checks $(CT)/test_core_profile_min
	$(CT)/test_core
	COLL_TEST_LEVEL=0 COLL_TEST_CHECKS=0 $(CT)/test_core
	COLL_TEST_LEVEL=0 $(CT)/test_core_blocking
	COLL_TEST_LEVEL=0 $(CT)/test_core_calm
	COLL_TEST_LEVEL=0 $(CT)/test_core_profile_core
	COLL_TEST_LEVEL=0 $(CT)/test_core_profile_checks
	COLL_TEST_LEVEL=0 $(CT)/test_core_profile_min

## test-memops-host: with memops set, coll.h never touches a buffer itself (the arena is PROT_NONE outside memops and the port)
test-memops-host: $(CT)/test_memops_host
	$<

## test-errors: invalid arguments, lost peers, abort
test-errors: $(CT)/test_errors
	$<

## test-groups: alltoallv, sub-communicators (split, nested), several requests in flight, threads + rendezvous ports
test-groups: $(CT)/test_groups
	$<

$(CT)/test_recorder: test/test_recorder.c $(CT_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=c99 $(CT_POSIX) $(CFLAGS) $(WARN) -o $@ $< $(LDLIBS_THREADS)
$(CT)/asan/test_recorder: test/test_recorder.c $(CT_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=c99 $(CT_POSIX) $(CT_ASAN) $(WARN) -o $@ $< $(LDLIBS_THREADS) -lm

## test-recorder: the flight recorder (the last calls, coll_dump) and a failure's figures (a rank that never calls is named), plain and ASan+UBSan
test-recorder: $(CT)/test_recorder $(CT)/asan/test_recorder
	$(CT)/test_recorder
	$(CT)/asan/test_recorder
TEST_TARGETS += test-recorder

# a max_bytes port in builds without the pieces layer: refused at coll_init
$(CT)/test_no_pieces: test/test_no_pieces.c $(CT_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=c99 $(CT_POSIX) -DCOLL_NO_PIECES $(CFLAGS) $(WARN) -o $@ $< $(LDLIBS_THREADS)
$(CT)/test_no_pieces_noarg: test/test_no_pieces.c $(CT_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=c99 $(CT_POSIX) -DCOLL_NO_PIECES -DCOLL_NO_ARGCHECK $(CFLAGS) $(WARN) -o $@ $< $(LDLIBS_THREADS)

## test-max-bytes: the port checker over a port that refuses messages over 1, 8 or 64 bytes (coll_port.max_bytes), 2-16 ranks; such a port refused without the pieces layer
test-max-bytes: $(CT)/test_max_bytes $(CT)/test_no_pieces $(CT)/test_no_pieces_noarg
	$<
	$(CT)/test_no_pieces
	$(CT)/test_no_pieces_noarg

## test-displs: v forms with displacements (reversed blocks, gaps untouched) against a plain loop, 1-7 ranks, plain and ASan+UBSan
test-displs: $(CT)/test_displs $(CT)/asan/test_displs
	$(CT)/test_displs
	$(CT)/asan/test_displs

## test-persistent: calls prepared once and run many times (new inputs each run, checks on, refusals, misuse), plain, ASan+UBSan, TSan; and the core matrix with every call persistent (level 0)
test-persistent: $(CT)/test_persistent $(CT)/asan/test_persistent $(CT)/tsan/test_persistent $(CT)/test_core
	$(CT)/test_persistent
	$(CT)/asan/test_persistent
	TSAN_OPTIONS=halt_on_error=1 $(CT)/tsan/test_persistent
	COLL_TEST_PERSIST=1 COLL_TEST_LEVEL=0 $(CT)/test_core

## test-identity: two communicators on one port, a replaying link, exactly coll_scratch_bytes of scratch (plain, ASan+UBSan, TSan)
test-identity: $(CT)/test_identity $(CT)/asan/test_identity $(CT)/tsan/test_identity
	$(CT)/test_identity
	$(CT)/asan/test_identity
	TSAN_OPTIONS=halt_on_error=1 $(CT)/tsan/test_identity

## test-checks: ranks that disagree, refusals, NaN agreement, damaged messages, broken communicators
test-checks: $(CT)/test_checks
	$<

## test-compile: C99/C11/C++11/C++17 with gcc and clang, two static copies, C89 declarations
test-compile:
	@sh test/compile/run.sh $(CT)/compile

# Sanitized runs take the quick matrix (every row, every p, sampled shapes):
# the instrumented threads are several times slower.
## test-asan: core matrix (quick), errors, checks, groups and AUTO's tuning under ASan + UBSan
test-asan: $(CT)/asan/test_core $(CT)/asan/test_errors $(CT)/asan/test_checks $(CT)/asan/test_groups $(CT)/asan/test_tune
	COLL_TEST_LEVEL=0 $(CT)/asan/test_core
	$(CT)/asan/test_errors
	$(CT)/asan/test_checks
	$(CT)/asan/test_groups
	$(CT)/asan/test_tune

## test-tsan: core matrix (quick; receivers copy at every rank count: COLL_THREADS_PULL=1) and errors under TSan
test-tsan: $(CT)/tsan/test_core $(CT)/tsan/test_core_calm $(CT)/tsan/test_errors $(CT)/tsan/test_checks $(CT)/tsan/test_groups
	TSAN_OPTIONS=halt_on_error=1 COLL_TEST_LEVEL=0 COLL_THREADS_PULL=1 $(CT)/tsan/test_core
	TSAN_OPTIONS=halt_on_error=1 COLL_TEST_LEVEL=0 $(CT)/tsan/test_core_calm
	TSAN_OPTIONS=halt_on_error=1 $(CT)/tsan/test_errors
	TSAN_OPTIONS=halt_on_error=1 $(CT)/tsan/test_checks
	TSAN_OPTIONS=halt_on_error=1 $(CT)/tsan/test_groups

# libFuzzer needs clang (and libclang-rt-14-dev); FUZZ_SECONDS bounds the run.
FUZZ_SECONDS ?= 60
$(CT)/fuzz_coll: test/fuzz_coll.c coll.h
	@mkdir -p $(@D)
	clang -g -O1 -DCOLL_DEBUG -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all $(WARN) -o $@ $<

## test-fuzz: libFuzzer with ASan+UBSan over the public API and the bytes a port delivers (FUZZ_SECONDS)
test-fuzz: $(CT)/fuzz_coll
	sh test/fuzz.sh $< $(FUZZ_SECONDS)

TEST_TARGETS += test-core test-memops-host test-errors test-checks test-groups test-identity test-persistent test-displs test-max-bytes test-compile test-asan test-tsan test-fuzz

$(CT)/test_tune: test/test_tune.c coll.h ports/coll_threads.h
	@mkdir -p $(@D)
	$(CC) -std=c99 $(CT_POSIX) $(CFLAGS) $(WARN) -o $@ $< $(LDLIBS_THREADS)
.PHONY: test-tune
## test-tune: coll_tune, coll_set_tuning and coll_add_rule
test-tune: $(CT)/test_tune
	$<
TEST_TARGETS += test-tune

$(B)/traffic: test/traffic.c coll.h ports/coll_threads.h test/test_ports.h | $(B)
	$(CC) -std=c99 $(CT_POSIX) $(CFLAGS) $(WARN) -o $@ $< $(LDLIBS_THREADS)

.PHONY: traffic test-traffic
## traffic: [docs] measured bytes and rounds of every algorithm against its formula, TSV
traffic: $(B)/traffic
	@$(B)/traffic

## test-traffic: the traffic table as a test (its closing line)
test-traffic: $(B)/traffic
	@$(B)/traffic >$(B)/traffic.tsv; rc=$$?; tail -1 $(B)/traffic.tsv; exit $$rc

TEST_TARGETS += test-traffic
