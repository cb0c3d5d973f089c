# coll - build, test, demo. Each area keeps its rules in mk/<area>.mk and adds
# its test targets to TEST_TARGETS; `make test` runs them all and prints one
# closing line "N passed, N failed".
#
# Every target has a line `## name: what it does` above its rule (here or in
# its mk/ fragment); `make help` lists those lines, and `make test-make`
# fails on a target without one. `## name: [group] what` puts it in a group
# of `make help` (run, test, bench, firmware, docs, or internal: hidden);
# without a tag, test*/*-test go to test, bench* to bench, the rest to
# other (tools/make_help.awk).
CC      ?= cc
CXX     ?= c++
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra -Wpedantic -Werror
B       := build
PREFIX  ?= /usr/local
LDLIBS_THREADS := -lpthread

TEST_TARGETS :=

.PHONY: all demo test traffic examples install uninstall clean help
## all: [run] the demo program (build/demo), nothing else
all: demo-bin

include $(sort $(wildcard mk/*.mk))

# every area's example programs (their fragments add to EXAMPLES_TARGETS)
## examples: [run] build every example program of every area
examples: $(EXAMPLES_TARGETS)

## test: every suite in TEST_TARGETS, one closing line "N passed, N failed"
test:
	@sh test/run_tests.sh $(TEST_TARGETS)

$(B):
	@mkdir -p $(B)

## clean: [run] remove build/ and half-written bench tables
clean:
	rm -rf $(B) bench/results/*.tsv.tmp

## help: [docs] this list, by group (the `## name: [group] what` lines; ALL=1 adds the internal ones)
help:
	@awk -v all='$(ALL)' -f tools/make_help.awk Makefile $(sort $(wildcard mk/*.mk))

# `make -n` (and -t, -q) runs nothing. GNU make still runs a recipe line
# that names $(MAKE), so that a sub-make can print its own commands; here
# such lines also launch programs (QEMU, the CUDA tests), so under these
# flags the shell only reads every line (sh -n) instead. Set last: the
# $(shell ...) calls of the fragments above have already run.
ifneq ($(findstring n,$(firstword -$(MAKEFLAGS)))$(findstring t,$(firstword -$(MAKEFLAGS)))$(findstring q,$(firstword -$(MAKEFLAGS))),)
.SHELLFLAGS := -nc
endif
