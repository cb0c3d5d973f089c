/* start_riscv.S - reset to main() on a RISC-V hart in machine mode.

   QEMU's virt machine with `-bios none` jumps to the start of RAM, where
   the linker script puts `_start`. Everything lives in RAM, so .data is
   already where it belongs; only .bss needs zeroing. Works for RV32 and
   RV64 (4-byte stores, .bss aligned to 8). */
    .section .text.start, "ax"
    .globl _start
_start:
    /* gp anchors the linker's gp-relative addressing of small data; it must
       be set without that relaxation, or the load would use gp itself. */
    .option push
    .option norelax
    la gp, __global_pointer$
    .option pop
    la sp, __stack_top
    /* Any trap (illegal instruction, misaligned access, ...) ends the run
       with a message instead of spinning silently. */
    la t0, bm_trap
    csrw mtvec, t0

    la t0, __bss_start
    la t1, __bss_end
1:  bgeu t0, t1, 2f
    sw zero, 0(t0)
    addi t0, t0, 4
    j 1b
2:  call bm_stack_paint      /* for the high-water mark, bm_stack_used()   */
    call main
    call bm_exit             /* main's return value is the exit code      */

    .balign 4                /* mtvec ignores the low two bits             */
bm_trap:
    la sp, __stack_top
    call bm_fault

/* long bm_semihost(long op, void *arg): op in a0, arg in a1, answer in a0.
   The request is `ebreak` between two no-op shifts that mark it; the three
   must be uncompressed and on one page, hence norvc and the alignment. */
    .text
    .balign 16
    .globl bm_semihost
bm_semihost:
    .option push
    .option norvc
    slli zero, zero, 0x1f
    ebreak
    srai zero, zero, 7
    .option pop
    ret
