# mk/ports-strict.mk - every port under the README's strict flags.
#
#   make test-ports-strict  -std=c99 -Wall -Wextra -pedantic -Werror with no
#                           feature macro given, gcc and clang: each port
#                           included first builds, links and runs (threads,
#                           shm, tcp, mailbox, template; mpi built with each
#                           mpicc); included after a system header, the
#                           threads, shm and tcp ports stop with their own
#                           #error, and build with their .pc file's Cflags
#
# Outputs under $(B)/ports-strict/.

.PHONY: test-ports-strict
## test-ports-strict: every port under -std=c99 -Wall -Wextra -pedantic -Werror, no feature macro given
test-ports-strict:
	@sh test/ports_strict.sh $(B)/ports-strict

TEST_TARGETS += test-ports-strict
