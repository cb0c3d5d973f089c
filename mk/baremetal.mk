# mk/baremetal.mk - coll with no operating system.
#
#   make cross          the library alone, freestanding, for five MCU targets;
#                       fails if an object needs more than libgcc's helpers
#   make size           .text/.data/.bss and worst-case stack per target
#                       (markdown, also in build/baremetal/size.md)
#   make qemu           the portable suite as firmware: 4 ranks on one core
#                       over a mailbox port, Cortex-M3 and RV32 under QEMU
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

# The smallest useful build: ring all-reduce of float32 sums. The masks are
# COLL_BIT(COLL_FLOAT32) = 1<<8, COLL_BIT(COLL_SUM) = 1<<0 and
# COLL_BIT(COLL_ALGO_RING) = 1<<2, written as numbers for the shell.
BM_MIN_DEFS ?= -DCOLL_DTYPES=256 -DCOLL_OPS=1 -DCOLL_ALGOS=4 -DCOLL_NO_COST_MODEL -DCOLL_NO_NAMES -DCOLL_NO_ERRSTR -DCOLL_NO_LAYOUT

# $(call bm_need,tools...): go on if all are installed; otherwise stop this
# recipe line, as a failure under CI and as a loud skip elsewhere.
bm_need = for t in $(1); do command -v $$t >/dev/null 2>&1 || { \
    if [ "$$CI" = true ]; then echo "baremetal: $$t not found (required under CI)"; exit 1; fi; \
    echo "baremetal: *** $$t not found: SKIPPING $@ ***"; exit 0; }; done

.PHONY: cross size qemu qemu-user test-portable bm-cross-%
TEST_TARGETS += test-portable cross size qemu qemu-user

# A file holding the flags in force: whatever depends on it is rebuilt when
# they change (make WARN=... must not leave objects built under other flags).
BM_STAMP := $(BM)/flags.txt
.PHONY: bm-force
$(BM_STAMP): bm-force
	@mkdir -p $(@D)
	@echo '$(CC) $(CFLAGS) $(WARN) $(BM_MIN_DEFS)' | cmp -s - $@ || \
	    echo '$(CC) $(CFLAGS) $(WARN) $(BM_MIN_DEFS)' > $@

# ---- cross: the library alone ------------------------------------------------

$(BM)/cross/%/coll.o: ports/baremetal/coll_lib.c coll.h $(BM_STAMP)
	@mkdir -p $(@D)
	$(BM_CC_$*) $(BM_ARCH_$*) $(BM_FREE) -fstack-usage -fcallgraph-info=su \
	    -I. -c $< -o $@

$(BM)/cross/%/min.o: ports/baremetal/coll_lib.c coll.h $(BM_STAMP)
	@mkdir -p $(@D)
	$(BM_CC_$*) $(BM_ARCH_$*) $(BM_FREE) $(BM_MIN_DEFS) -I. -c $< -o $@

# The object with the libgcc helpers it pulls in: what it costs in flash.
$(BM)/cross/%/linked.o: $(BM)/cross/%/coll.o
	$(BM_CC_$*) $(BM_ARCH_$*) -nostdlib -r $< \
	    "$$($(BM_CC_$*) $(or $(BM_LIB_$*),$(BM_ARCH_$*)) -print-libgcc-file-name)" -o $@

# One target: build, then compare what the object needs with its libgcc.
## bm-cross-%: one `make cross` target alone, e.g. bm-cross-cortex-m0plus (internal)
bm-cross-%:
	@echo "cross $*: $(BM_ARCH_$*)"
	@$(MAKE) --no-print-directory -s $(BM)/cross/$*/coll.o && \
	sh tools/cross_check.sh $(BM)/cross/$*/coll.o $(patsubst %gcc,%nm,$(BM_CC_$*)) \
	    "$$($(BM_CC_$*) $(or $(BM_LIB_$*),$(BM_ARCH_$*)) -print-libgcc-file-name)"

## cross: the library alone, freestanding, for five MCU targets; fails beyond libgcc helpers
cross:
	@$(call bm_need,$(ARM_GCC) $(RV_GCC)); \
	p=0; f=0; \
	for t in $(BM_TARGETS); do \
	    if $(MAKE) --no-print-directory bm-cross-$$t; then p=$$((p + 1)); \
	    else f=$$((f + 1)); echo "cross $$t: FAILED"; fi; \
	done; \
	echo "cross: $$p passed, $$f failed"; [ $$f -eq 0 ]

# ---- size: the table for the README --------------------------------------------

## size: .text/.data/.bss and worst-case stack per MCU target (build/baremetal/size.md)
size:
	@$(call bm_need,$(ARM_GCC) $(RV_GCC)); \
	for t in $(BM_TARGETS); do \
	    $(MAKE) --no-print-directory -s $(BM)/cross/$$t/coll.o $(BM)/cross/$$t/linked.o || exit 1; \
	    if [ -n "$(BM_MIN_DEFS)" ]; then \
	        $(MAKE) --no-print-directory -s $(BM)/cross/$$t/min.o || exit 1; fi; \
	done; \
	sh tools/size_report.sh $(BM)/size.md $(BM)/cross \
	    $(foreach t,$(BM_TARGETS),$(t)=$(patsubst %gcc,%size,$(BM_CC_$(t))))

# ---- qemu: the portable suite as firmware ----------------------------------------

BM_SUITE_SRC  := test/test_portable.c ports/baremetal/coll_mbox.h coll.h test/coll_test.h test/test_values.h $(BM_STAMP)
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
BM_EXAMPLE  := examples/baremetal/allreduce4.c ports/baremetal/coll_mbox.h coll.h $(BM_STAMP)

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

## qemu: the portable suite as firmware, 4 ranks on one core, Cortex-M3 and RV32 under QEMU
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

## qemu-user: the portable suite on 32-bit ARM and big-endian PowerPC Linux under qemu-user
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
