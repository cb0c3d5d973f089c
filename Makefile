# coll - build, test, demo. Each area keeps its rules in mk/<area>.mk and adds
# its test targets to TEST_TARGETS; `make test` runs them all and prints one
# closing line "N passed, N failed".
CC      ?= cc
CXX     ?= c++
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra -Wpedantic -Werror
B       := build
PREFIX  ?= /usr/local
LDLIBS_THREADS := -lpthread

TEST_TARGETS :=

.PHONY: all demo test traffic examples install clean help
all: demo-bin

include $(sort $(wildcard mk/*.mk))

# every area's example programs (their fragments add to EXAMPLES_TARGETS)
examples: $(EXAMPLES_TARGETS)

test:
	@sh test/run_tests.sh $(TEST_TARGETS)

$(B):
	@mkdir -p $(B)

install:
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/include/coll/ports $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 coll.h coll_cuda.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 ports/*.h $(DESTDIR)$(PREFIX)/include/coll/ports/
	sed -e 's|@PREFIX@|$(PREFIX)|' coll.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/coll.pc

clean:
	rm -rf $(B) bench/results/*.tsv.tmp

help:
	@echo "make demo | test | traffic | examples | install PREFIX=... | clean"
