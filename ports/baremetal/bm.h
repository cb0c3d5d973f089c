/* bm.h - the few services a bare-metal test program needs: console output and
   exit through semihosting, a small printf, and the libc memory functions
   the compiler may call on its own. Nothing here is used by coll.h itself;
   the library needs none of it (see `make cross`). */
#ifndef BM_H
#define BM_H
#ifndef __ASSEMBLER__          /* the build may -include this in .S files too */

#include <stdarg.h>
#include <stddef.h>

/* One semihosting request: op in the first argument register, a pointer to
   its parameter block in the second, the answer comes back in the first.
   On Cortex-M it is `bkpt 0xab`; on RISC-V the three-instruction sequence
   slli/ebreak/srai, which a debugger (or QEMU) recognises as a request. */
long bm_semihost(long op, void *arg);

enum {
    BM_SYS_WRITEC = 0x03,      /* one character                            */
    BM_SYS_WRITE0 = 0x04,      /* a NUL-terminated string                  */
    BM_SYS_EXIT   = 0x18       /* stop; 0x20026 means "exited normally"    */
};

void bm_puts(const char *s);                           /* no newline added */
int  bm_vsnprintf(char *out, size_t size, const char *fmt, va_list ap);
int  bm_printf(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* Ends the program: QEMU exits with status 0 when code is 0, 1 otherwise. */
void bm_exit(int code)
#if defined(__GNUC__)
    __attribute__((noreturn))
#endif
    ;

/* Deepest stack use seen so far, in bytes: bm_stack_paint() fills the free
   stack with a pattern at start-up, bm_stack_used() finds where it stops. */
void   bm_stack_paint(void);
size_t bm_stack_used(void);

/* Cooperative tasks (bm_task.c): bm_switch saves the running task's
   registers on its own stack, stores its stack pointer in *save and
   resumes the task whose stack pointer is `next`. bm_task_stack prepares
   `bytes` at `stack` so that switching to the pointer it returns starts
   entry(), which must never return. */
void  bm_switch(void **save, void *next);
void *bm_task_stack(void *stack, size_t bytes, void (*entry)(void));

#endif /* __ASSEMBLER__ */
#endif /* BM_H */
