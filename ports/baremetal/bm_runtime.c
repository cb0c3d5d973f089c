/* bm_runtime.c - console, exit and memory functions for the bare-metal test
   programs (see bm.h). Plain C99 over one primitive, bm_semihost(), which
   the start-up file of each architecture supplies. */
#include "bm.h"

/* ---- output -------------------------------------------------------------- */

void bm_puts(const char *s)
{
    bm_semihost(BM_SYS_WRITE0, (void *)s);
}

/* A growing string with a hard end: every writer goes through put(), which
   counts what it would have written (as snprintf does) but never passes the
   end of the buffer. */
typedef struct bm__out { char *p; size_t n, size; } bm__out;

static void bm__put(bm__out *o, char c)
{
    if (o->n + 1 < o->size) o->p[o->n] = c;
    o->n++;
}

static void bm__pad(bm__out *o, int count, char c)
{
    while (count-- > 0) bm__put(o, c);
}

/* Digits of v in `base`, then padding: left-justified pads after, zero pads
   go between the sign and the digits. */
static void bm__int(bm__out *o, unsigned long long v, int neg, unsigned base,
                    int upper, int width, int left, int zero)
{
    char tmp[24];
    const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    int len = 0, i;
    do { tmp[len++] = digits[v % base]; v /= base; } while (v != 0);
    width -= len + (neg ? 1 : 0);
    if (!left && !zero) bm__pad(o, width, ' ');
    if (neg) bm__put(o, '-');
    if (!left && zero) bm__pad(o, width, '0');
    for (i = len - 1; i >= 0; i--) bm__put(o, tmp[i]);
    if (left) bm__pad(o, width, ' ');
}

/* Enough of %f, %e and %g to read a test's diagnostics: the digits come
   from repeated scaling, so the last one may be off by one unit. */
static void bm__float(bm__out *o, double v, int prec, char conv)
{
    int exp10 = 0, i, strip = conv == 'g';
    double scale = 1.0;
    if (v != v) { bm__put(o, 'n'); bm__put(o, 'a'); bm__put(o, 'n'); return; }
    if (v < 0) { bm__put(o, '-'); v = -v; }
    if (v > 1e300) { bm__put(o, 'i'); bm__put(o, 'n'); bm__put(o, 'f'); return; }
    if (prec < 0) prec = 6;
    if (conv != 'f' && v != 0.0) {
        while (v >= 10.0) { v /= 10.0; exp10++; }
        while (v < 1.0) { v *= 10.0; exp10--; }
        if (conv == 'g') {
            if (prec == 0) prec = 1;
            if (exp10 >= -4 && exp10 < prec) {
                for (i = 0; i < exp10; i++) v *= 10.0;
                for (i = 0; i > exp10; i--) v /= 10.0;
                conv = 'f';
                prec = prec - 1 - exp10;
            } else {
                prec = prec - 1;
                conv = 'e';
            }
        }
    } else if (conv == 'g') {
        conv = 'f';
        prec = 0;
    }
    for (i = 0; i < prec; i++) scale *= 10.0;
    {
        /* Integer part and `prec` decimals, rounded once. */
        double whole = v * scale + 0.5;
        unsigned long long ip, fp;
        if (whole > 1.8e19) { bm__put(o, '?'); return; }
        ip = (unsigned long long)(whole / scale);
        fp = (unsigned long long)whole - (unsigned long long)(ip * scale);
        bm__int(o, ip, 0, 10, 0, 0, 0, 0);
        while (strip && prec > 0 && fp % 10 == 0) { fp /= 10; prec--; }
        if (prec > 0) {
            bm__put(o, '.');
            bm__int(o, fp, 0, 10, 0, prec, 0, 1);
        }
    }
    if (conv == 'e') {
        bm__put(o, 'e');
        bm__put(o, exp10 < 0 ? '-' : '+');
        bm__int(o, (unsigned long long)(exp10 < 0 ? -exp10 : exp10), 0, 10, 0, 2, 0, 1);
    }
}

int bm_vsnprintf(char *out, size_t size, const char *fmt, va_list ap)
{
    bm__out o;
    o.p = out; o.n = 0; o.size = size;
    for (; *fmt; fmt++) {
        int left = 0, zero = 0, width = 0, prec = -1, lng = 0;
        if (*fmt != '%') { bm__put(&o, *fmt); continue; }
        fmt++;
        for (;; fmt++) {
            if (*fmt == '-') left = 1;
            else if (*fmt == '0') zero = 1;
            else if (*fmt != '+' && *fmt != ' ' && *fmt != '#') break;
        }
        if (*fmt == '*') { width = va_arg(ap, int); fmt++; }
        while (*fmt >= '0' && *fmt <= '9') width = width * 10 + (*fmt++ - '0');
        if (*fmt == '.') {
            fmt++;
            prec = 0;
            if (*fmt == '*') { prec = va_arg(ap, int); fmt++; }
            while (*fmt >= '0' && *fmt <= '9') prec = prec * 10 + (*fmt++ - '0');
        }
        for (;; fmt++) {
            if (*fmt == 'l') lng++;
            else if (*fmt == 'z' || *fmt == 't') lng = 3;
            else if (*fmt == 'j') lng = 2;
            else if (*fmt != 'h') break;
        }
        switch (*fmt) {
        case 'd': case 'i': {
            long long v = lng == 3 ? (long long)va_arg(ap, ptrdiff_t)
                        : lng == 2 ? va_arg(ap, long long)
                        : lng == 1 ? va_arg(ap, long) : va_arg(ap, int);
            unsigned long long m = v < 0 ? 0ull - (unsigned long long)v
                                         : (unsigned long long)v;
            bm__int(&o, m, v < 0, 10, 0, width, left, zero);
            break;
        }
        case 'u': case 'x': case 'X': case 'o': {
            unsigned long long v = lng == 3 ? va_arg(ap, size_t)
                                 : lng == 2 ? va_arg(ap, unsigned long long)
                                 : lng == 1 ? va_arg(ap, unsigned long)
                                 : va_arg(ap, unsigned);
            unsigned base = *fmt == 'u' ? 10u : *fmt == 'o' ? 8u : 16u;
            bm__int(&o, v, 0, base, *fmt == 'X', width, left, zero);
            break;
        }
        case 'p':
            bm__put(&o, '0'); bm__put(&o, 'x');
            bm__int(&o, (unsigned long long)(size_t)va_arg(ap, void *), 0, 16, 0, 0, 0, 0);
            break;
        case 'c':
            bm__put(&o, (char)va_arg(ap, int));
            break;
        case 's': {
            const char *s = va_arg(ap, const char *);
            int len = 0, i;
            if (!s) s = "(null)";
            while (s[len] && (prec < 0 || len < prec)) len++;
            if (!left) bm__pad(&o, width - len, ' ');
            for (i = 0; i < len; i++) bm__put(&o, s[i]);
            if (left) bm__pad(&o, width - len, ' ');
            break;
        }
        case 'f': case 'e': case 'g': case 'F': case 'E': case 'G':
            bm__float(&o, va_arg(ap, double), prec,
                      (char)(*fmt | 0x20));
            break;
        case '%':
            bm__put(&o, '%');
            break;
        default:                     /* unknown: show it rather than guess */
            bm__put(&o, '%');
            if (*fmt) bm__put(&o, *fmt); else fmt--;
            break;
        }
    }
    if (size > 0) out[o.n < size ? o.n : size - 1] = '\0';
    return (int)o.n;
}

/* One semihosting call per printf: a trap per character would make the
   test suite's output the slowest part of the run. */
int bm_printf(const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = bm_vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    bm_puts(buf);
    return n;
}

void bm_exit(int code)
{
    /* ADP_Stopped_ApplicationExit on success, ADP_Stopped_RunTimeErrorUnknown
       otherwise: QEMU turns them into exit status 0 and 1. 32-bit targets
       pass the reason itself, 64-bit ones a block {reason, subcode}. */
    unsigned long reason = code == 0 ? 0x20026ul : 0x20023ul;
    if (sizeof(void *) == 8) {
        unsigned long block[2];
        block[0] = reason;
        block[1] = (unsigned long)code;
        bm_semihost(BM_SYS_EXIT, block);
    } else {
        bm_semihost(BM_SYS_EXIT, (void *)reason);
    }
    for (;;) { }
}

/* Where the start-up code jumps on a fault or trap: say so and fail. */
void bm_fault(void)
{
    bm_puts("bm: fault or unexpected trap\n");
    bm_exit(2);
}

/* ---- stack high-water mark ------------------------------------------------ */

extern char __stack_limit[], __stack_top[];     /* from the linker script */
#define BM_PAINT 0xa5u

void bm_stack_paint(void)
{
    volatile unsigned char *p = (volatile unsigned char *)__stack_limit;
    char here;
    /* Stop well short of our own frame: the bytes below it are free. (The
       address goes through an integer: it points outside any object.) */
    unsigned char *end = (unsigned char *)((size_t)&here - 128u);
    while (p < end) *p++ = BM_PAINT;
}

size_t bm_stack_used(void)
{
    const volatile unsigned char *p = (const volatile unsigned char *)__stack_limit;
    while (p < (const unsigned char *)__stack_top && *p == BM_PAINT) p++;
    return (size_t)((const unsigned char *)__stack_top - (const unsigned char *)p);
}

/* ---- what the compiler may call on its own ---------------------------------
   GCC may emit calls to these four for struct copies and initialisers even
   in a freestanding build. Byte loops: the programs are tests, not hot. */

void *memcpy(void *dst, const void *src, size_t n)
{
    unsigned char *d = (unsigned char *)dst;
    const unsigned char *s = (const unsigned char *)src;
    while (n--) *d++ = *s++;
    return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
    unsigned char *d = (unsigned char *)dst;
    const unsigned char *s = (const unsigned char *)src;
    if (d < s) { while (n--) *d++ = *s++; }
    else { d += n; s += n; while (n--) *--d = *--s; }
    return dst;
}

void *memset(void *dst, int c, size_t n)
{
    unsigned char *d = (unsigned char *)dst;
    while (n--) *d++ = (unsigned char)c;
    return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    for (; n; n--, x++, y++)
        if (*x != *y) return *x < *y ? -1 : 1;
    return 0;
}

size_t strlen(const char *s)
{
    size_t n = 0;
    while (s[n]) n++;
    return n;
}
