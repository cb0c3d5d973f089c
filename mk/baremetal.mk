# mk/baremetal.mk - coll with no operating system.
#
#   make cross          the library alone, freestanding, for five MCU targets;
#                       fails if an object needs more than libgcc's helpers
#   make size           flash and worst-case stack per target for three
#                       profiles, full, core and minimal (markdown, also in
#                       build/baremetal/size.md; figures in size.tsv)
#   make size-check     the Cortex-M4F figures against tools/size_budgets.txt
#                       (part of make test)
#   make size-macros    what each trimming macro saves on Cortex-M4F
#   make qemu           the portable suite as firmware: 4 ranks on one core
#                       over a mailbox port, Cortex-M3 and RV32 under QEMU
#   make qemu-min       the minimal firmware (examples/baremetal/min_allreduce.c)
#                       under QEMU: Cortex-M3, Cortex-M4F and RV32
#   make qemu-user      the portable suite on 32-bit ARM and big-endian
#                       PowerPC Linux, under qemu-user
#   make test-portable  the portable suite on this machine
#
# Outside CI a missing cross compiler or QEMU skips its target loudly; with
# CI=true it fails.

BM            := $(B)/baremetal
ARM_GCC       ?= arm-none-eabi-gcc
RV_GCC        ?= riscv64-unknown-elf-gcc
ARMHF_CC      ?= arm-linux-gnueabihf-gcc
PPC_CC        ?= powerpc-linux-gnu-gcc
QEMU_SYS_ARM  ?= qemu-system-arm
QEMU_SYS_RV32 ?= qemu-system-riscv32
QEMU_USER_ARM ?= qemu-arm
QEMU_USER_PPC ?= qemu-ppc
BM_TIMEOUT    ?= 60

# The flags firmware builds use. GCC may still turn a copy loop into a call
# to memcpy; -fno-tree-loop-distribute-patterns stops that.
BM_FREE := -std=c99 -ffreestanding -fno-builtin -nostdlib -Os \
           -fno-tree-loop-distribute-patterns $(WARN)

# Targets of `make cross`: compiler, code-generation flags, and (where the
# -march spelling does not select the right multilib) the flags that find
# its libgcc: GCC 12 knows rv32imac but not rv32imac_zicsr as a multilib.
BM_TARGETS := cortex-m0plus cortex-m4f cortex-m7 rv32imac rv64imac
BM_CC_cortex-m0plus  := $(ARM_GCC)
BM_ARCH_cortex-m0plus := -mcpu=cortex-m0plus -mthumb
BM_CC_cortex-m4f     := $(ARM_GCC)
BM_ARCH_cortex-m4f   := -mcpu=cortex-m4 -mthumb -mfpu=fpv4-sp-d16 -mfloat-abi=hard
BM_CC_cortex-m7      := $(ARM_GCC)
BM_ARCH_cortex-m7    := -mcpu=cortex-m7 -mthumb -mfpu=fpv5-d16 -mfloat-abi=hard
BM_CC_rv32imac       := $(RV_GCC)
BM_ARCH_rv32imac     := -march=rv32imac_zicsr -mabi=ilp32 -mcmodel=medany
BM_LIB_rv32imac      := -march=rv32imac -mabi=ilp32
BM_CC_rv64imac       := $(RV_GCC)
BM_ARCH_rv64imac     := -march=rv64imac_zicsr -mabi=lp64 -mcmodel=medany
BM_LIB_rv64imac      := -march=rv64imac -mabi=lp64

# Not in `make cross`, only the firmware: the core QEMU's mps2-an385 has.
BM_CC_cortex-m3      := $(ARM_GCC)
BM_ARCH_cortex-m3    := -mcpu=cortex-m3 -mthumb

# The three profiles of `make size` (the masks are written as numbers for
# the shell: COLL_BIT(x) = 1 << x).
#  full     every collective, algorithm, dtype and op, layouts, tuning, checks.
#  core     allreduce, reduce_scatter, allgather, broadcast, reduce
#           (COLL_KINDS: COLL_BIT 0..4 = 31); naive, ring and tree, which
#           for broadcast and reduce are linear and binomial, and the small
#           calls' dissemination rows (COLL_BIT 1, 2, 3, 4, 15, 16 = 98334);
#           sum, min, max, avg (COLL_BIT 0, 2, 3, 4 = 29); every dtype; the
#           rest as full.
#  minimal  ring all-reduce of float32 sums: COLL_DTYPES = COLL_BIT(COLL_FLOAT32)
#           = 256, COLL_OPS = COLL_BIT(COLL_SUM) = 1, COLL_ALGOS =
#           COLL_BIT(COLL_ALGO_RING) = 4, COLL_KINDS = COLL_BIT(COLL_ALLREDUCE)
#           = 1, and every COLL_NO_* switch. Measured
#           as linked into examples/baremetal/min_allreduce.c.
BM_CORE_DEFS ?= -DCOLL_KINDS=31 -DCOLL_ALGOS=98334 -DCOLL_OPS=29
BM_MIN_DEFS ?= -DCOLL_DTYPES=256 -DCOLL_OPS=1 -DCOLL_ALGOS=4 -DCOLL_KINDS=1 -DCOLL_NO_COST_MODEL -DCOLL_NO_NAMES -DCOLL_NO_ERRSTR -DCOLL_NO_LAYOUT -DCOLL_NO_CHECKS -DCOLL_NO_NONBLOCKING -DCOLL_NO_PIECES -DCOLL_NO_MEMOPS -DCOLL_NO_REUSE -DCOLL_NO_RECORDER -DCOLL_NO_SHRINK -DCOLL_NO_OBSERVER
# What a firmware link does to drop everything nobody calls.
BM_GC := -ffunction-sections -fdata-sections
# The budgets `make size-check` holds the Cortex-M4F figures to.
BM_BUDGETS := tools/size_budgets.txt

# $(call bm_need,tools...): go on if all are installed; otherwise stop this
# recipe line, as a failure under CI and as a loud skip elsewhere.
bm_need = for t in $(1); do command -v $$t >/dev/null 2>&1 || { \
    if [ "$$CI" = true ]; then echo "baremetal: $$t not found (required under CI)"; exit 1; fi; \
    echo "baremetal: *** $$t not found: SKIPPING $@ ***"; exit 0; }; done

.PHONY: cross size size-check size-macros qemu qemu-min qemu-user test-portable bm-cross-%
TEST_TARGETS += test-portable cross size size-check qemu qemu-min qemu-user

# A file holding the flags in force: whatever depends on it is rebuilt when
# they change (make WARN=... must not leave objects built under other flags).
BM_STAMP := $(BM)/flags.txt
.PHONY: bm-force
$(BM_STAMP): bm-force
	@mkdir -p $(@D)
	@echo '$(CC) $(CFLAGS) $(WARN) $(BM_MIN_DEFS) $(BM_CORE_DEFS)' | cmp -s - $@ || \
	    echo '$(CC) $(CFLAGS) $(WARN) $(BM_MIN_DEFS) $(BM_CORE_DEFS)' > $@

# ---- cross: the library alone ------------------------------------------------

$(BM)/cross/%/coll.o: ports/baremetal/coll_lib.c coll.h coll_layout.h $(BM_STAMP)
	@mkdir -p $(@D)
	$(BM_CC_$*) $(BM_ARCH_$*) $(BM_FREE) -fstack-usage -fcallgraph-info=su \
	    -I. -c $< -o $@

$(BM)/cross/%/core.o: ports/baremetal/coll_lib.c coll.h coll_layout.h $(BM_STAMP)
	@mkdir -p $(@D)
	$(BM_CC_$*) $(BM_ARCH_$*) $(BM_FREE) $(BM_CORE_DEFS) -fstack-usage -fcallgraph-info=su \
	    -I. -c $< -o $@

# The object with the libgcc helpers it pulls in: what it costs in flash.
$(BM)/cross/%/linked.o: $(BM)/cross/%/coll.o
	$(BM_CC_$*) $(BM_ARCH_$*) -nostdlib -r $< \
	    "$$($(BM_CC_$*) $(or $(BM_LIB_$*),$(BM_ARCH_$*)) -print-libgcc-file-name)" -o $@

# One target: build, then compare what the object needs with its libgcc.
## bm-cross-%: [internal] one `make cross` target alone, e.g. bm-cross-cortex-m0plus
bm-cross-%:
	@echo "cross $*: $(BM_ARCH_$*)"
	@$(MAKE) --no-print-directory -s $(BM)/cross/$*/coll.o && \
	sh tools/cross_check.sh $(BM)/cross/$*/coll.o $(patsubst %gcc,%nm,$(BM_CC_$*)) \
	    "$$($(BM_CC_$*) $(or $(BM_LIB_$*),$(BM_ARCH_$*)) -print-libgcc-file-name)"

## cross: [firmware] the library alone, freestanding, for five MCU targets; fails beyond libgcc helpers
cross:
	@$(call bm_need,$(ARM_GCC) $(RV_GCC)); \
	p=0; f=0; \
	for t in $(BM_TARGETS); do \
	    if $(MAKE) --no-print-directory bm-cross-$$t; then p=$$((p + 1)); \
	    else f=$$((f + 1)); echo "cross $$t: FAILED"; fi; \
	done; \
	echo "cross: $$p passed, $$f failed"; [ $$f -eq 0 ]

# ---- qemu: the portable suite as firmware ----------------------------------------

BM_SUITE_SRC  := test/test_portable.c ports/coll_mailbox.h coll.h test/coll_test.h test/test_values.h $(BM_STAMP)
BM_FW_FLAGS   := -std=c99 -ffreestanding -fno-builtin -nostdlib -Os -g \
                 -fno-tree-loop-distribute-patterns $(WARN) \
                 -I. -Iports/baremetal -include ports/baremetal/bm.h \
                 -DCOLL_TEST_PRINTF=bm_printf -DPORTABLE_STACK_USED=bm_stack_used
BM_RT_SRC     := ports/baremetal/bm_runtime.c ports/baremetal/bm.h

# Each firmware: the program, the runtime, the board's start-up and layout.
BM_ARM_FW = $(ARM_GCC) -mcpu=cortex-m3 -mthumb $(BM_FW_FLAGS) -T ports/baremetal/mps2_an385.ld \
    ports/baremetal/start_cortex_m.S ports/baremetal/bm_runtime.c $(1) -lgcc -o $@
BM_RV_FW = $(RV_GCC) $(BM_ARCH_rv32imac) $(BM_FW_FLAGS) -T ports/baremetal/riscv_virt.ld \
    -Wl,--no-warn-rwx-segments ports/baremetal/start_riscv.S ports/baremetal/bm_runtime.c $(1) \
    "$$($(RV_GCC) $(BM_LIB_rv32imac) -print-libgcc-file-name)" -o $@
BM_ARM_DEPS := $(BM_RT_SRC) ports/baremetal/start_cortex_m.S ports/baremetal/mps2_an385.ld
BM_RV_DEPS  := $(BM_RT_SRC) ports/baremetal/start_riscv.S ports/baremetal/riscv_virt.ld
BM_EXAMPLE  := examples/baremetal/allreduce4.c ports/coll_mailbox.h coll.h $(BM_STAMP)

$(BM)/qemu/mps2-an385.elf: $(BM_SUITE_SRC) $(BM_ARM_DEPS)
	@mkdir -p $(@D)
	$(call BM_ARM_FW,test/test_portable.c)
$(BM)/qemu/riscv-virt.elf: $(BM_SUITE_SRC) $(BM_RV_DEPS)
	@mkdir -p $(@D)
	$(call BM_RV_FW,test/test_portable.c)
$(BM)/qemu/allreduce4-mps2-an385.elf: $(BM_EXAMPLE) $(BM_ARM_DEPS)
	@mkdir -p $(@D)
	$(call BM_ARM_FW,examples/baremetal/allreduce4.c)
$(BM)/qemu/allreduce4-riscv-virt.elf: $(BM_EXAMPLE) $(BM_RV_DEPS)
	@mkdir -p $(@D)
	$(call BM_RV_FW,examples/baremetal/allreduce4.c)

# Semihosting output to stdout, no serial port or monitor in the way; the
# program ends QEMU through SYS_EXIT with its own result.
BM_QEMU_IO := -nographic -monitor none -serial none -chardev stdio,id=s0 \
              -semihosting-config enable=on,target=native,chardev=s0

BM_QEMU_ARM  = timeout $(BM_TIMEOUT) $(QEMU_SYS_ARM) -M mps2-an385 -cpu cortex-m3 $(BM_QEMU_IO) -kernel
BM_QEMU_RV32 = timeout $(BM_TIMEOUT) $(QEMU_SYS_RV32) -M virt -bios none $(BM_QEMU_IO) -kernel

## qemu: [firmware] the portable suite as firmware, 4 ranks on one core, Cortex-M3 and RV32 under QEMU
qemu:
	@$(call bm_need,$(ARM_GCC) $(RV_GCC) $(QEMU_SYS_ARM) $(QEMU_SYS_RV32)); \
	$(MAKE) --no-print-directory $(BM)/qemu/mps2-an385.elf $(BM)/qemu/riscv-virt.elf \
	    $(BM)/qemu/allreduce4-mps2-an385.elf $(BM)/qemu/allreduce4-riscv-virt.elf || exit 1; \
	rc=0; \
	echo "--- qemu-system-arm -M mps2-an385 (Cortex-M3)"; \
	$(BM_QEMU_ARM) $(BM)/qemu/allreduce4-mps2-an385.elf || rc=1; \
	$(BM_QEMU_ARM) $(BM)/qemu/mps2-an385.elf || rc=1; \
	echo "--- qemu-system-riscv32 -M virt (RV32IMAC)"; \
	$(BM_QEMU_RV32) $(BM)/qemu/allreduce4-riscv-virt.elf || rc=1; \
	$(BM_QEMU_RV32) $(BM)/qemu/riscv-virt.elf || rc=1; \
	exit $$rc

# ---- size: the table for the README --------------------------------------------

# The minimal firmware, for any of the targets above: the library as its
# own object (what a firmware's coll.c would be), the example, the runtime
# and the board's start-up, every function in its own section and the
# unused ones dropped at link time. The .map tells whose bytes remain.
BM_MIN_SRC := examples/baremetal/min_allreduce.c ports/baremetal/bm_task.c \
              ports/coll_mailbox.h $(BM_RT_SRC)
bm_board = $(if $(filter rv%,$(1)),riscv,arm)
BM_LD_arm      := ports/baremetal/mps2_an385.ld
BM_START_arm   := ports/baremetal/start_cortex_m.S
BM_LDX_arm     :=
BM_LD_riscv    := ports/baremetal/riscv_virt.ld
BM_START_riscv := ports/baremetal/start_riscv.S
BM_LDX_riscv   := -Wl,--no-warn-rwx-segments

# bm_min_linked(dir, defs): the library object and the linked minimal
# firmware of one set of macros: the minimal profile, the same with
# COLL_NO_ARGCHECK (argument checks become assertions, for parts whose
# every call is known good), and the same with the call checks (as the
# core profile has them: no payload CRC, no small calls).
define bm_min_linked
.PRECIOUS: $(BM)/$(1)/%/coll.o
$(BM)/$(1)/%/coll.o: ports/baremetal/coll_lib.c coll.h coll_layout.h $(BM_STAMP)
	@mkdir -p $$(@D)
	$$(BM_CC_$$*) $$(BM_ARCH_$$*) $$(BM_FREE) $(2) $$(BM_GC) -fstack-usage \
	    -fcallgraph-info=su -I. -c $$< -o $$@

$(BM)/$(1)/%/min_allreduce.elf: $(BM)/$(1)/%/coll.o $(BM_MIN_SRC) coll.h $(BM_ARM_DEPS) $(BM_RV_DEPS)
	$$(BM_CC_$$*) $$(BM_ARCH_$$*) $$(BM_FW_FLAGS) $(2) $$(BM_GC) \
	    -T $$(BM_LD_$$(call bm_board,$$*)) $$(BM_LDX_$$(call bm_board,$$*)) \
	    -Wl,--gc-sections -Wl,-Map=$$(@:.elf=.map) \
	    $$(BM_START_$$(call bm_board,$$*)) ports/baremetal/bm_runtime.c ports/baremetal/bm_task.c \
	    examples/baremetal/min_allreduce.c $$< \
	    "$$$$($$(BM_CC_$$*) $$(or $$(BM_LIB_$$*),$$(BM_ARCH_$$*)) -print-libgcc-file-name)" -o $$@
endef
$(eval $(call bm_min_linked,min,$(BM_MIN_DEFS)))
$(eval $(call bm_min_linked,min-noarg,$(BM_MIN_DEFS) -DCOLL_NO_ARGCHECK))
BM_MIN_CHECKS_DEFS := $(filter-out -DCOLL_NO_CHECKS,$(BM_MIN_DEFS)) -DCOLL_NO_CRC -DCOLL_EAGER_BYTES=0
$(eval $(call bm_min_linked,min-checks,$(BM_MIN_CHECKS_DEFS)))

# The core profiles linked the same way, into examples/baremetal/core_calls.c
# (coll_init and the five core collectives with run-time dtype, op and
# algorithm): "plain" without the call checks, blocking only, no cost model,
# strings, names, small calls, pieces or observer; "checks" the same with the call
# checks (not COLL_CHECK_CRC's payload CRCs: COLL_NO_CRC); "all" every feature of the core masks (and the resumable and
# persistent calls, the check settings, the strings).
BM_CORE_LEAN := -DCOLL_NO_NONBLOCKING -DCOLL_NO_COST_MODEL -DCOLL_NO_ERRSTR -DCOLL_NO_NAMES \
                -DCOLL_NO_LAYOUT -DCOLL_NO_PIECES -DCOLL_EAGER_BYTES=0 -DCOLL_NO_OBSERVER
BM_CORE_PLAIN_DEFS  := $(BM_CORE_DEFS) $(BM_CORE_LEAN) -DCOLL_NO_CHECKS
BM_CORE_CHECKS_DEFS := $(BM_CORE_DEFS) $(BM_CORE_LEAN) -DCOLL_NO_CRC
BM_CORE_ALL_DEFS    := $(BM_CORE_DEFS) -DCOLL_NO_LAYOUT -DCORE_CALLS_EVERYTHING
BM_CORE_PROFILES    := core-plain core-checks core-all

# bm_core_linked(dir, defs): the library object and the linked image of one profile
define bm_core_linked
.PRECIOUS: $(BM)/$(1)/%/coll.o
$(BM)/$(1)/%/coll.o: ports/baremetal/coll_lib.c coll.h coll_layout.h $(BM_STAMP)
	@mkdir -p $$(@D)
	$$(BM_CC_$$*) $$(BM_ARCH_$$*) $$(BM_FREE) $(2) $$(BM_GC) -I. -c $$< -o $$@

$(BM)/$(1)/%/core_calls.elf: $(BM)/$(1)/%/coll.o examples/baremetal/core_calls.c ports/coll_mailbox.h coll.h $(BM_ARM_DEPS) $(BM_RV_DEPS)
	$$(BM_CC_$$*) $$(BM_ARCH_$$*) $$(BM_FW_FLAGS) $(2) $$(BM_GC) \
	    -T $$(BM_LD_$$(call bm_board,$$*)) $$(BM_LDX_$$(call bm_board,$$*)) \
	    -Wl,--gc-sections -Wl,-Map=$$(@:.elf=.map) \
	    $$(BM_START_$$(call bm_board,$$*)) ports/baremetal/bm_runtime.c \
	    examples/baremetal/core_calls.c $$< \
	    "$$$$($$(BM_CC_$$*) $$(or $$(BM_LIB_$$*),$$(BM_ARCH_$$*)) -print-libgcc-file-name)" -o $$@
endef
$(eval $(call bm_core_linked,core-plain,$(BM_CORE_PLAIN_DEFS)))
$(eval $(call bm_core_linked,core-checks,$(BM_CORE_CHECKS_DEFS)))
$(eval $(call bm_core_linked,core-all,$(BM_CORE_ALL_DEFS)))

## size: [firmware] flash of the full, core and minimal profiles and worst-case stack per MCU target (build/baremetal/size.md)
size:
	@$(call bm_need,$(ARM_GCC) $(RV_GCC)); \
	for t in $(BM_TARGETS); do \
	    $(MAKE) --no-print-directory -s $(BM)/cross/$$t/coll.o $(BM)/cross/$$t/linked.o \
	        $(BM)/cross/$$t/core.o $(BM)/min/$$t/min_allreduce.elf $(BM)/min-noarg/$$t/min_allreduce.elf \
	        $(BM)/min-checks/$$t/min_allreduce.elf \
	        $(foreach p,$(BM_CORE_PROFILES),$(BM)/$(p)/$$t/core_calls.elf) || exit 1; \
	done; \
	sh tools/size_report.sh $(BM)/size.md $(BM)/size.tsv $(BM) \
	    $(foreach t,$(BM_TARGETS),$(t)=$(patsubst %gcc,%size,$(BM_CC_$(t))))

## size-check: [firmware] Cortex-M4F flash and stack against tools/size_budgets.txt; fails on any budget exceeded
size-check:
	@$(call bm_need,$(ARM_GCC) $(RV_GCC)); \
	mkdir -p $(BM); \
	$(MAKE) --no-print-directory size > $(BM)/size.log 2>&1 || { cat $(BM)/size.log; exit 1; }; \
	sh tools/size_check.sh $(BM_BUDGETS) $(BM)/size.tsv

## size-macros: [firmware] Cortex-M4F .text saved by each trimming macro, alone on the full build and dropped from minimal
size-macros:
	@$(call bm_need,$(ARM_GCC)); \
	sh tools/size_macros.sh $(BM)/macros.md $(BM)/macros "$(MAKE) --no-print-directory -s" \
	    $(patsubst %gcc,%size,$(ARM_GCC)) "$(BM_MIN_DEFS)" "$(BM_CORE_ALL_DEFS)"

# ---- qemu-min: the minimal firmware runs ---------------------------------------------

# The same images `make size` measures (profile:target:qemu:board:cpu):
# Cortex-M4F (the budgeted one) on mps2-an386, whose memory map is the
# AN385's, in the three minimal profiles, and RV32; plus a Cortex-M3
# build on mps2-an385, the board `make qemu` uses.
BM_MIN_RUNS := min:cortex-m3:$(QEMU_SYS_ARM):mps2-an385:cortex-m3 \
               min:cortex-m4f:$(QEMU_SYS_ARM):mps2-an386:cortex-m4 \
               min-noarg:cortex-m4f:$(QEMU_SYS_ARM):mps2-an386:cortex-m4 \
               min-checks:cortex-m4f:$(QEMU_SYS_ARM):mps2-an386:cortex-m4 \
               min:rv32imac:$(QEMU_SYS_RV32):virt:

## qemu-min: [firmware] the minimal firmware (ring all-reduce, float32 sum) on Cortex-M3, M4F (also without argument checks and with the call checks) and RV32 under QEMU
qemu-min:
	@$(call bm_need,$(ARM_GCC) $(RV_GCC) $(QEMU_SYS_ARM) $(QEMU_SYS_RV32)); \
	$(MAKE) --no-print-directory $(foreach r,$(BM_MIN_RUNS),$(BM)/$(word 1,$(subst :, ,$(r)))/$(word 2,$(subst :, ,$(r)))/min_allreduce.elf) || exit 1; \
	p=0; f=0; \
	for run in $(BM_MIN_RUNS); do \
	    d=$${run%%:*}; rest=$${run#*:}; t=$${rest%%:*}; rest=$${rest#*:}; \
	    q=$${rest%%:*}; rest=$${rest#*:}; m=$${rest%%:*}; cpu=$${rest#*:}; \
	    echo "--- $$q -M $$m$${cpu:+ -cpu $$cpu} ($$d, $$t)"; \
	    if timeout $(BM_TIMEOUT) $$q -M $$m $${cpu:+-cpu $$cpu} $$([ $$m = virt ] && echo -bios none) \
	            $(BM_QEMU_IO) -kernel $(BM)/$$d/$$t/min_allreduce.elf; then p=$$((p + 1)); \
	    else f=$$((f + 1)); echo "qemu-min $$d $$t: FAILED"; fi; \
	done; \
	echo "qemu-min: $$p passed, $$f failed"; [ $$f -eq 0 ]

# ---- qemu-user: 32-bit and big-endian Linux ----------------------------------------

# Hosted builds add the blocking calls over the threads port.
BM_HOSTED := -DPORTABLE_THREADS -D_POSIX_C_SOURCE=200809L -pthread
BM_SUITE_SRC_HOSTED := $(BM_SUITE_SRC) ports/coll_threads.h
BM_USER_FLAGS := -std=c99 -O2 -g $(WARN) -I. -Iports/baremetal $(BM_HOSTED) -static

$(BM)/user/armhf/test_portable: $(BM_SUITE_SRC_HOSTED)
	@mkdir -p $(@D)
	$(ARMHF_CC) $(BM_USER_FLAGS) test/test_portable.c -o $@

$(BM)/user/ppc/test_portable: $(BM_SUITE_SRC_HOSTED)
	@mkdir -p $(@D)
	$(PPC_CC) $(BM_USER_FLAGS) test/test_portable.c -o $@

## qemu-user: [firmware] the portable suite on 32-bit ARM and big-endian PowerPC Linux under qemu-user
qemu-user:
	@$(call bm_need,$(ARMHF_CC) $(PPC_CC) $(QEMU_USER_ARM) $(QEMU_USER_PPC)); \
	$(MAKE) --no-print-directory $(BM)/user/armhf/test_portable $(BM)/user/ppc/test_portable || exit 1; \
	rc=0; \
	echo "--- qemu-arm (armhf, 32-bit little-endian)"; \
	timeout $(BM_TIMEOUT) $(QEMU_USER_ARM) -L /usr/arm-linux-gnueabihf \
	    $(BM)/user/armhf/test_portable || rc=1; \
	echo "--- qemu-ppc (powerpc, 32-bit big-endian)"; \
	timeout $(BM_TIMEOUT) $(QEMU_USER_PPC) -L /usr/powerpc-linux-gnu \
	    $(BM)/user/ppc/test_portable || rc=1; \
	exit $$rc

# ---- test-portable: the same suite on this machine ----------------------------------

$(BM)/host/test_portable: $(BM_SUITE_SRC_HOSTED)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -std=c99 $(WARN) -I. -Iports/baremetal $(BM_HOSTED) test/test_portable.c \
	    -o $@ $(LDLIBS_THREADS)

## test-portable: the portable suite on this machine
test-portable: $(BM)/host/test_portable
	@timeout $(BM_TIMEOUT) $(BM)/host/test_portable
