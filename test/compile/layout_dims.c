/* COLL_LAYOUT_MAX_DIMS is a setting: defined before the include it bounds
   the dimensions (once it was also the include guard of the declarations,
   and defining it broke the build). 3 dimensions work, 4 are refused. */
#define COLL_LAYOUT_MAX_DIMS 3
#define COLL_IMPLEMENTATION
#include "../../coll_layout.h"
#include <stdio.h>
#include <string.h>

static int nop_send(void *ctx, int peer, const void *buf, size_t bytes)
{ (void)ctx; (void)peer; (void)buf; (void)bytes; return 0; }
static int nop_recv(void *ctx, int peer, void *buf, size_t bytes)
{ (void)ctx; (void)peer; (void)buf; (void)bytes; return 0; }

int main(void)
{
    coll_comm c;
    coll_port port;
    double scratch[8];
    float a[24], b[24];
    size_t shape3[3] = { 2, 3, 4 }, shape4[4] = { 2, 3, 2, 2 };
    int i, ok3, ok4;
    for (i = 0; i < 24; i++) { a[i] = (float)i; b[i] = -1; }
    memset(&port, 0, sizeof port);
    port.send = nop_send; port.recv = nop_recv;
    if (coll_init(&c, 0, 1, &port, scratch, sizeof scratch) != COLL_OK) return 1;
    ok3 = coll_layout_convert(&c, 3, shape3, COLL_FLOAT32, a, coll_sbp_split(0), b,
                              coll_sbp_broadcast(), NULL, 0) == COLL_OK && b[23] == 23.0f;
    ok4 = coll_layout_convert(&c, 4, shape4, COLL_FLOAT32, a, coll_sbp_split(0), b,
                              coll_sbp_broadcast(), NULL, 0) == COLL_ERR_INVAL;
    printf("layout dims %d: 3 dimensions %s, 4 %s\n", COLL_LAYOUT_MAX_DIMS, ok3 ? "ok" : "FAILED",
           ok4 ? "refused" : "NOT REFUSED");
    return ok3 && ok4 ? 0 : 1;
}
