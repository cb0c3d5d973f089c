# mk/ports-tcp.mk - the TCP port, its tests and three seed programs.
#
#   make test-tcp         ranks as processes on 127.0.0.1: the port, the
#                         rendezvous, the collectives, killed and stopped peers
#   make test-tcp-auth    the rendezvous against intruders, an impostor master,
#                         idle and malformed connections, other versions/tokens
#   make test-tcp-flood   the rendezvous against strangers that would hold it:
#                         a version-1 peer that streams without end, 200
#                         silent strangers reconnecting, MASTER_PORT held
#                         by another program (loopback only, ~10 s)
#   make test-tcp-mac     the keyed mode: a tag on every message; a relay that
#                         forges (CRC kept valid), replays, drops and swaps
#                         bytes; ranks that disagree on the mode; then the
#                         whole of test-tcp in the keyed mode (~20 s)
#   make test-tcp-san     test-tcp, test-tcp-auth, test-tcp-flood, test-tcp-mac under ASan + UBSan
#   make test-tcp-netns   ranks on separate network namespaces (root; skipped
#                         loudly elsewhere, a failure under CI=true)
#   make seed-torch       naive and ring all-reduce, 4 processes, env launch
#   make seed-muji        tree all-reduce on 2..8 ranks, hierarchical 2 x 4
#   make seed-oneflow     a 4 x 5 tensor split over 2 processes, SBP changes,
#                         split(0) x broadcast matmul
#
# The seed-*-test targets are the seeds with their checks and without the
# printing; they are what `make test` runs.

TCPB       := $(B)/tcp
TCP_CFLAGS := -std=c99 -D_POSIX_C_SOURCE=200809L $(CFLAGS) $(WARN) -I.
TCP_HDRS   := coll.h ports/coll_tcp.h
TCP_CHECK  := test/check_port.h test/coll_test.h test/test_values.h test/test_clock.h

$(TCPB)/test_tcp: test/test_tcp.c $(TCP_HDRS) $(TCP_CHECK)
	@mkdir -p $(@D)
	$(CC) $(TCP_CFLAGS) -o $@ $<

$(TCPB)/test_tcp_auth: test/test_tcp_auth.c test/test_children.h test/test_tally.h $(TCP_HDRS)
	@mkdir -p $(@D)
	$(CC) $(TCP_CFLAGS) -o $@ $<

$(TCPB)/test_tcp_flood: test/test_tcp_flood.c test/test_children.h test/test_tally.h $(TCP_HDRS)
	@mkdir -p $(@D)
	$(CC) $(TCP_CFLAGS) -o $@ $<

$(TCPB)/test_tcp_mac: test/test_tcp_mac.c test/test_children.h test/test_tally.h $(TCP_HDRS)
	@mkdir -p $(@D)
	$(CC) $(TCP_CFLAGS) -o $@ $<

# The same two under AddressSanitizer and UndefinedBehaviorSanitizer.
TCP_SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
$(TCPB)/san/%: test/%.c test/test_children.h test/test_tally.h $(TCP_HDRS) $(TCP_CHECK)
	@mkdir -p $(@D)
	$(CC) $(TCP_CFLAGS) -O1 $(TCP_SAN) -o $@ $<

.PHONY: test-tcp test-tcp-auth test-tcp-flood test-tcp-mac test-tcp-san test-tcp-netns
## test-tcp: the TCP port, ranks as processes on 127.0.0.1, killed and stopped peers
test-tcp: $(TCPB)/test_tcp
	@timeout 120 $(TCPB)/test_tcp

## test-tcp-auth: the TCP rendezvous against intruders, an impostor master, idle and malformed connections
test-tcp-auth: $(TCPB)/test_tcp_auth
	@timeout 120 $(TCPB)/test_tcp_auth

## test-tcp-flood: the TCP rendezvous against a streaming stranger, a flood of strangers, a MASTER_PORT already taken
test-tcp-flood: $(TCPB)/test_tcp_flood
	@timeout 120 $(TCPB)/test_tcp_flood

## test-tcp-mac: the TCP port's keyed mode against a relay that forges, replays, drops and swaps; test-tcp in that mode
test-tcp-mac: $(TCPB)/test_tcp_mac $(TCPB)/test_tcp
	@timeout 120 $(TCPB)/test_tcp_mac && COLL_TCP_MAC=1 timeout 120 $(TCPB)/test_tcp

## test-tcp-san: test-tcp-auth, test-tcp-flood, test-tcp-mac and test-tcp under ASan + UBSan
test-tcp-san: $(TCPB)/san/test_tcp $(TCPB)/san/test_tcp_auth $(TCPB)/san/test_tcp_flood $(TCPB)/san/test_tcp_mac
	@timeout 300 $(TCPB)/san/test_tcp_auth && timeout 300 $(TCPB)/san/test_tcp_flood && \
	 timeout 300 $(TCPB)/san/test_tcp_mac && timeout 300 $(TCPB)/san/test_tcp

## test-tcp-netns: the TCP tests across network namespaces (root)
test-tcp-netns: $(TCPB)/test_tcp
	@sh test/tcp_netns.sh $(TCPB)/test_tcp

TEST_TARGETS += test-tcp test-tcp-auth test-tcp-flood test-tcp-mac test-tcp-netns

# ---- seeds -------------------------------------------------------------------
$(TCPB)/seed_torch: examples/seed_torch.c $(TCP_HDRS)
	@mkdir -p $(@D)
	$(CC) $(TCP_CFLAGS) -o $@ $<

$(TCPB)/seed_oneflow: examples/seed_oneflow.c $(TCP_HDRS)
	@mkdir -p $(@D)
	$(CC) $(TCP_CFLAGS) -o $@ $<

$(TCPB)/seed_muji: examples/seed_muji.c coll.h ports/coll_threads.h
	@mkdir -p $(@D)
	$(CC) $(TCP_CFLAGS) -o $@ $< $(LDLIBS_THREADS)

.PHONY: seed-torch seed-muji seed-oneflow seed-torch-test seed-muji-test seed-oneflow-test
## seed-torch: [run] naive and ring all-reduce, 4 processes, torchrun-style env launch
seed-torch: $(TCPB)/seed_torch
	@$(TCPB)/seed_torch
## seed-muji: [run] tree all-reduce on 2..8 ranks, hierarchical 2 x 4
seed-muji: $(TCPB)/seed_muji
	@$(TCPB)/seed_muji
## seed-oneflow: [run] a 4 x 5 tensor split over 2 processes, SBP changes, split x broadcast matmul
seed-oneflow: $(TCPB)/seed_oneflow
	@$(TCPB)/seed_oneflow

# The same programs under a time limit: each checks every rank's result and
# ends with its "N passed, N failed" line and a non-zero status on failure.
## seed-torch-test: the torch seed with its checks, under a time limit
seed-torch-test: $(TCPB)/seed_torch
	@timeout 60 $(TCPB)/seed_torch
## seed-muji-test: the muji seed with its checks, under a time limit
seed-muji-test: $(TCPB)/seed_muji
	@timeout 60 $(TCPB)/seed_muji
## seed-oneflow-test: the oneflow seed with its checks, under a time limit
seed-oneflow-test: $(TCPB)/seed_oneflow
	@timeout 60 $(TCPB)/seed_oneflow

TEST_TARGETS += seed-torch-test seed-muji-test seed-oneflow-test
EXAMPLES_TARGETS += $(TCPB)/seed_torch $(TCPB)/seed_muji $(TCPB)/seed_oneflow
