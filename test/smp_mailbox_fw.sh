#!/bin/sh
# test/smp_mailbox_fw.sh OUTDIR - ports/coll_smp_mailbox.h as Cortex-M4
# firmware (test/smp_mailbox_fw.c), compiled freestanding with
# arm-none-eabi-gcc: as C11 (<stdatomic.h>) and as C99 with
# COLL_SMP_BARRIER() a DMB. Each object must carry DMB instructions, hold
# both roads (the message all-reduce and the window one, coll_window.h) and
# need nothing from a C library but memcpy (libgcc's __aeabi_* helpers
# aside). A missing compiler is a loud skip, and a failure under CI=true.
# Ends with "smp_mailbox_fw: N passed, N failed".
out=$1
cc=${ARM_GCC:-arm-none-eabi-gcc}
p=0; f=0
if ! command -v "$cc" >/dev/null 2>&1; then
    if [ "$CI" = true ]; then
        echo "smp_mailbox_fw: $cc not found (required under CI)"
        echo "smp_mailbox_fw: 0 passed, 1 failed"; exit 1
    fi
    echo "smp_mailbox_fw: *** $cc not found: SKIPPING ***"; exit 0
fi
mkdir -p "$out"
arch="-mcpu=cortex-m4 -mthumb -mfpu=fpv4-sp-d16 -mfloat-abi=hard"
free="-ffreestanding -fno-builtin -Os -Wall -Wextra -Wpedantic -Werror -I."
for v in c11 c99; do
    o=$out/smp_mailbox_fw_$v.o
    if [ $v = c11 ]; then
        $cc $arch -std=c11 $free -c test/smp_mailbox_fw.c -o "$o"
    else
        $cc $arch -std=c99 '-DCOLL_SMP_BARRIER()=__asm__ volatile("dmb" ::: "memory")' \
            $free -c test/smp_mailbox_fw.c -o "$o"
    fi
    if [ $? -ne 0 ]; then echo "  FAIL  $v: does not compile"; f=$((f + 1)); continue; fi
    p=$((p + 1))
    libc=$(${cc%gcc}nm -u "$o" | awk '{print $2}' | grep -v '^__aeabi_' | grep -v '^memcpy$')
    if [ -n "$libc" ]; then
        echo "  FAIL  $v: needs $(echo $libc)"; f=$((f + 1))
    else p=$((p + 1)); fi
    for fn in smp_core_allreduce smp_core_window_allreduce; do
        if ${cc%gcc}nm "$o" | grep -q " T $fn\$"; then p=$((p + 1))
        else echo "  FAIL  $v: no $fn"; f=$((f + 1)); fi
    done
    dmb=$(${cc%gcc}objdump -d "$o" | grep -c 'dmb')
    if [ "$dmb" -gt 0 ]; then p=$((p + 1)); else echo "  FAIL  $v: no DMB"; f=$((f + 1)); fi
    echo "  $v: $(${cc%gcc}size "$o" | awk 'NR == 2 {print $1 " B text"}'), $dmb DMB"
done
echo "smp_mailbox_fw: $p passed, $f failed"
[ $f -eq 0 ]
