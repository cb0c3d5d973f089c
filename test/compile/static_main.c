/* Calls into both static copies (see static_tu.c). */
#include <stdio.h>
int static_a(void);
int static_b(void);
int main(void)
{
    int a = static_a(), b = static_b();
    if (a || b) printf("static copies: %d %d\n", a, b);
    return a != 0 || b != 0;
}
