# mk/ports-smp.mk - the multi-core mailbox port (ports/coll_smp_mailbox.h):
# lock-free single-producer/single-consumer rings between cores, with POSIX
# threads standing in for the cores.
#
#   make test-smp-mailbox       the port checker at 1, 2, 3, 4 and 7 ranks,
#                               point to point, the port's refusals (a
#                               corrupted ring is an error, not a crash): as
#                               C11 (<stdatomic.h>), and quick as C99 with
#                               COLL_SMP_BARRIER(), and quick under ASan and
#                               UBSan; then compiled freestanding for
#                               Cortex-M4 (test/smp_mailbox_fw.sh)
#   make test-smp-mailbox-tsan  the C11 build's whole run under TSan

SMP_B    := $(B)/ports-smp
SMP_DEPS := test/test_smp_mailbox.c coll.h ports/coll_smp_mailbox.h test/check_port.h test/test_clock.h \
            test/coll_test.h test/test_values.h

$(SMP_B)/test_smp_mailbox: $(SMP_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=c11 $(CFLAGS) $(WARN) -I. -o $@ $< $(LDLIBS_THREADS)

$(SMP_B)/test_smp_mailbox_barrier: $(SMP_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=c99 '-DCOLL_SMP_BARRIER()=__sync_synchronize()' $(CFLAGS) $(WARN) -I. -o $@ $< $(LDLIBS_THREADS)

$(SMP_B)/asan/test_smp_mailbox: $(SMP_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=c11 -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	    -fno-sanitize-recover=all $(WARN) -I. -o $@ $< $(LDLIBS_THREADS)

$(SMP_B)/tsan/test_smp_mailbox: $(SMP_DEPS)
	@mkdir -p $(@D)
	$(CC) -std=c11 -O1 -g -fsanitize=thread $(WARN) -I. -o $@ $< $(LDLIBS_THREADS)

.PHONY: test-smp-mailbox test-smp-mailbox-tsan
## test-smp-mailbox: the multi-core mailbox port with threads as cores (C11 atomics, C99 with a barrier macro, ASan), and built freestanding for Cortex-M4
test-smp-mailbox: $(SMP_B)/test_smp_mailbox $(SMP_B)/test_smp_mailbox_barrier $(SMP_B)/asan/test_smp_mailbox
	timeout 300 $(SMP_B)/test_smp_mailbox
	timeout 300 $(SMP_B)/test_smp_mailbox_barrier quick
	timeout 300 $(SMP_B)/asan/test_smp_mailbox quick
	sh test/smp_mailbox_fw.sh $(SMP_B)/fw

## test-smp-mailbox-tsan: the multi-core mailbox port's test under ThreadSanitizer
test-smp-mailbox-tsan: $(SMP_B)/tsan/test_smp_mailbox
	timeout 600 $<

TEST_TARGETS += test-smp-mailbox test-smp-mailbox-tsan
