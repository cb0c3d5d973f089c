# mk/hosts.mk - the composite port (ports/coll_hosts.h): shared memory
# between the ranks of one host, TCP between hosts, one port.
#
#   make test-hosts   emulated hosts as network namespaces (root): 2x2, 4x2,
#                     2x4 and 8x1 ranks, interleaved and host-major, links
#                     shaped by tc; every collective checked on every rank,
#                     the host table, where the bytes went, a killed rank,
#                     an unplugged host, a wrong LOCAL_RANK; first, as any
#                     user, 2x2 on 127.0.0.1 with hosts made by COLL_HOST_ID
#                     (the namespace jobs are skipped loudly without root,
#                     a failure under CI=true)
#   make test-hosts-san  the same with every rank under ASan + UBSan
#
# coll_hier.h's forms are tested too once that header is in the tree.
#
#   make bench-hosts  all-reduce, broadcast, all-gather, reduce-scatter,
#                     8 B..64 MiB, 2 emulated hosts x 2 ranks, links at
#                     1 and 10 Gbit/s: coll ring, AUTO, coll_hier (each
#                     interleaved and host-major), Open MPI, Gloo, then the
#                     goals PASS/MISS (bench/bench_hosts.sh; root; ~10 min)

HOSTSB       := $(B)/hosts
HOSTS_HDRS   := coll.h ports/coll_hosts.h ports/coll_tcp.h ports/coll_shm.h test/coll_test.h
HOSTS_HIER   := $(if $(wildcard coll_hier.h),-DTEST_HOSTS_HIER)
HOSTS_CFLAGS := -std=c99 -D_DEFAULT_SOURCE $(CFLAGS) $(WARN) -I. $(HOSTS_HIER)

$(HOSTSB)/test_hosts: test/test_hosts.c $(HOSTS_HDRS) $(wildcard coll_hier.h)
	@mkdir -p $(@D)
	$(CC) $(HOSTS_CFLAGS) -o $@ $<

$(HOSTSB)/san/test_hosts: test/test_hosts.c $(HOSTS_HDRS) $(wildcard coll_hier.h)
	@mkdir -p $(@D)
	$(CC) $(HOSTS_CFLAGS) -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	    -fno-omit-frame-pointer -o $@ $<

.PHONY: test-hosts test-hosts-san
## test-hosts: the composite port (shm on a host, TCP between hosts) on emulated hosts in network namespaces (root)
test-hosts: $(HOSTSB)/test_hosts
	@timeout 300 sh test/hosts_netns.sh $(HOSTSB)/test_hosts

## test-hosts-san: test-hosts with every rank under ASan + UBSan (~1 min)
test-hosts-san: $(HOSTSB)/san/test_hosts
	@timeout 600 sh test/hosts_netns.sh $(HOSTSB)/san/test_hosts

TEST_TARGETS += test-hosts

# ---- bench-hosts: four collectives across two emulated hosts (root) --------
HOSTS_MPICC := $(shell command -v mpicc.openmpi 2>/dev/null)
HOSTS_GLOO  := $(wildcard /usr/include/gloo/allreduce_ring.h)

$(HOSTSB)/bench_hosts: bench/bench_hosts.c $(HOSTS_HDRS) coll_hier.h
	@mkdir -p $(@D)
	$(CC) -std=c99 -D_DEFAULT_SOURCE -O2 $(WARN) -I. -o $@ $<

$(HOSTSB)/bench_hosts_mpi: bench/bench_hosts.c
	@mkdir -p $(@D)
	$(HOSTS_MPICC) -std=c99 -O2 $(WARN) -DBENCH_HOSTS_MPI -o $@ $<

$(HOSTSB)/bench_hosts_gloo: bench/bench_hosts.c
	@mkdir -p $(@D)
	$(CXX) -x c++ -std=c++17 -O2 -Wall -Wextra -Werror -DBENCH_HOSTS_GLOO -o $@ $< -lgloo $(LDLIBS_THREADS)

.PHONY: bench-hosts
## bench-hosts: all-reduce, broadcast, all-gather, reduce-scatter 8 B..64 MiB over 2 emulated hosts x 2 ranks at 1 and 10 Gbit/s: coll ring, AUTO, coll_hier, Open MPI, Gloo, and the goals (root, ~10 min)
bench-hosts: $(HOSTSB)/bench_hosts $(if $(HOSTS_MPICC),$(HOSTSB)/bench_hosts_mpi) $(if $(HOSTS_GLOO),$(HOSTSB)/bench_hosts_gloo) $(BENCH_B)/tcpstream
	@BENCH_HOSTS_TCPSTREAM=$(BENCH_B)/tcpstream BENCH_HOSTS_GLOO=$(if $(HOSTS_GLOO),$(HOSTSB)/bench_hosts_gloo) sh bench/bench_hosts.sh $(HOSTSB)/bench_hosts $(if $(HOSTS_MPICC),$(HOSTSB)/bench_hosts_mpi)
