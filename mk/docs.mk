# mk/docs.mk - the docs pages' generated parts.
#
#   make docs-size   the size tables of docs/firmware.md again: runs
#                    `make size` and `make size-macros`, then writes their
#                    markdown (build/baremetal/size.md, macros.md) between
#                    the marks in the page (tools/docs_tables.sh)
#
# `make test-readme` (mk/install.mk) compares those parts with the same
# files whenever they are newer than coll.h, and checks every code block
# and relative link of README.md and docs/*.md.

.PHONY: docs-size

## docs-size: [docs] docs/firmware.md's size tables again, from make size and make size-macros
docs-size:
	@$(MAKE) --no-print-directory size size-macros && \
	sh tools/docs_tables.sh write docs/firmware.md size=$(B)/baremetal/size.md \
	    size-macros=$(B)/baremetal/macros.md
