# mk/install.mk - install, and the checks that keep the README and `make
# help` true.
#
#   make install        headers and pkg-config files (layout below)
#   make uninstall      removes exactly what install put there
#   make test-install   install into a temporary DESTDIR, and into a
#                       temporary PREFIX; build every C block of README.md
#                       and docs/*.md against each with pkg-config, run
#                       the programs, uninstall,
#                       check that no coll file is left
#   make test-readme    every C block of README.md and docs/*.md compiled
#                       as written (-std=c99 -Wall -Wextra -pedantic
#                       -Werror), each program run; the make targets of
#                       their sh blocks exist, python blocks parse, links
#                       resolve, the size tables match `make size`;
#                       ports/coll_threads.h as the first include of a
#                       strict C99 file (test/readme.sh)
#   make test-make      every target has its `## name:` line; `make -n` of
#                       every target prints its commands and runs none
#
# The installed layout keeps the tree's own, under one folder:
#     $(INCLUDEDIR)/coll/coll.h, coll_layout.h, coll_hier.h, coll_cuda.h   INCLUDEDIR = $(PREFIX)/include
#     $(INCLUDEDIR)/coll/ports/coll_*.h
#     $(PKGCONFIGDIR)/coll.pc                      -I$(INCLUDEDIR)/coll
#     $(PKGCONFIGDIR)/coll-threads.pc              coll + -pthread
#     $(PKGCONFIGDIR)/coll-shm.pc                  coll + -lrt (shm_open on old glibc)
# so `#include "coll.h"` and `#include "ports/coll_threads.h"` mean the
# same with -I. in the tree and with `pkg-config --cflags coll` installed.
# Header-only, so the .pc files are architecture-independent: PKGCONFIGDIR
# defaults to $(PREFIX)/share/pkgconfig, which pkg-config searches.

INCLUDEDIR   ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(PREFIX)/share/pkgconfig
INST_HDRS    := coll.h coll_layout.h coll_hier.h coll_cuda.h
INST_PORTS   := $(sort $(notdir $(wildcard ports/*.h)))
INST_PC      := coll.pc coll-threads.pc coll-shm.pc
INST_INC     := $(DESTDIR)$(INCLUDEDIR)/coll
INST_FILES   := $(addprefix $(INST_INC)/,$(INST_HDRS)) \
                $(addprefix $(INST_INC)/ports/,$(INST_PORTS)) \
                $(addprefix $(DESTDIR)$(PKGCONFIGDIR)/,$(INST_PC))
# includedir in the .pc files: relative to ${prefix} when it lies under it
INST_PC_INCDIR = $(patsubst $(PREFIX)/%,$${prefix}/%,$(INCLUDEDIR))
# the version on coll.h's first line: "/* coll.h - v0.1.0 - ..."
COLL_VERSION := $(or $(shell sed -n '1s/^.* - v\([0-9][0-9.]*\) - .*/\1/p' coll.h),0)

.PHONY: install uninstall test-install test-readme test-make
TEST_TARGETS += test-install test-readme test-make

## install: [run] headers to PREFIX/include/coll, coll*.pc to PREFIX/share/pkgconfig (PREFIX=/usr/local, DESTDIR)
install:
	install -d $(INST_INC)/ports $(DESTDIR)$(PKGCONFIGDIR)
	install -m 644 $(INST_HDRS) $(INST_INC)/
	install -m 644 $(addprefix ports/,$(INST_PORTS)) $(INST_INC)/ports/
	for pc in $(INST_PC); do \
	    sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@INCLUDEDIR@|$(INST_PC_INCDIR)|g' \
	        -e 's|@VERSION@|$(COLL_VERSION)|g' $$pc.in > $(DESTDIR)$(PKGCONFIGDIR)/$$pc || exit 1; \
	    chmod 644 $(DESTDIR)$(PKGCONFIGDIR)/$$pc; \
	done

# The same list as install, file by file; then coll's own two folders if
# they are empty. Shared folders (include/, share/pkgconfig/) stay.
## uninstall: [run] remove exactly the files install writes (same PREFIX, DESTDIR)
uninstall:
	rm -f $(INST_FILES)
	rmdir $(INST_INC)/ports 2>/dev/null || true
	rmdir $(INST_INC) 2>/dev/null || true

IB := $(B)/install

## test-install: install to a temp DESTDIR and PREFIX, build + run the README's and docs' C blocks via pkg-config, uninstall
test-install:
	@sh test/install.sh '$(IB)' '$(CC)' '$(INST_HDRS)' '$(INST_PORTS)' '$(INST_PC)'

## test-readme: every code block of README.md and docs/*.md as written (C compiled strictly and run), links, size tables
test-readme:
	@sh test/readme.sh '$(IB)/readme' '$(CC)' '$(B)'

## test-make: every target has a `## name:` line; `make -n` of each prints and runs nothing
test-make:
	@sh test/make_checks.sh '$(IB)/make'
