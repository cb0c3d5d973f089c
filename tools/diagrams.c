/* diagrams.c - a picture of every schedule, and one page that shows them all.

       make diagrams            -> build/diagrams/index.html and build/diagrams/svg/
       build/teach/diagrams DIR

   For every registered (collective, algorithm) at p = 4 and p = 6, the
   schedule is played on every rank (tools/sched_sim.h, the same pure
   functions the library runs) and drawn: ranks are horizontal lanes, steps
   are columns, each message an arrow from its sender's step to its
   receiver's, labelled with the block it carries; red arrows ending in a
   circle are reduced into the receiver's data, blue ones copied. The page
   (no external assets; the SVGs beside it) gives each algorithm's idea and
   cost, and a chart of the α-β-γ model's predicted all-reduce time against
   message size (each curve the cost function of its row in coll.h, on the
   plan coll_start would make), with what AUTO picks at each size. Arrow
   labels are placed along their arrows clear of other labels and arrows. */
#define COLL_IMPLEMENTATION
#include "coll.h"
#include "tools/sched_sim.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

/* ---- what each algorithm does and costs (as in README.md) ----------------- */
typedef struct algo_text { coll_kind kind; coll_algo algo; const char *idea, *cost; } algo_text;
static const algo_text texts[] = {
    { COLL_ALLREDUCE, COLL_ALGO_NAIVE, "Every rank sends its whole vector to rank 0, which adds them up and sends the sum back to each (the torch seed).", "2(p-1)(α+nβ) + (p-1)nγ, all at rank 0" },
    { COLL_ALLREDUCE, COLL_ALGO_RING, "Reduce-scatter around the ring (each block collects one contribution per hop), then all-gather the finished blocks around it again.", "2(p-1)α + 2(p-1)/p·nβ + (p-1)/p·nγ" },
    { COLL_ALLREDUCE, COLL_ALGO_TREE, "Binomial tree: pairs reduce level by level down to rank 0, then the result fans back out the same tree.", "2lg·α + lg·n(2β+γ)" },
    { COLL_ALLREDUCE, COLL_ALGO_RECURSIVE_DOUBLING, "In step k swap the whole partial result with the rank 2^k away and reduce: lg p rounds, every rank ends with everything.", "lg·α + n·lg(β+γ)" },
    { COLL_ALLREDUCE, COLL_ALGO_RABENSEIFNER, "Recursive halving reduce-scatter (each exchange halves the data), then recursive doubling all-gather.", "2lg·α + 2(p-1)/p·nβ + (p-1)/p·nγ" },
    { COLL_ALLREDUCE, COLL_ALGO_HIERARCHICAL, "Reduce inside each group to its first rank, ring all-reduce among those leaders, broadcast back inside the groups (groups of 2 here).", "2lg g·(α+nβ) + ring over p/g leaders" },
    { COLL_ALLREDUCE, COLL_ALGO_PIPELINED_TREE, "A binary tree; the vector is cut into chunks that stream up (reduced at each node) and back down, all levels busy at once.", "≈(2lg+4C)α + 3nβ(1+lg/C)" },
    { COLL_ALLREDUCE, COLL_ALGO_DOUBLE_TREE, "NCCL's double binary tree: two pipelined binary trees, each reducing and broadcasting half the vector in chunks; a rank inner in one tree is a leaf in the other, so each step pairs a message on one tree with one on the other (2n bytes per rank instead of 3n).", "≈(2C+4lg)(α+nβ/C) + nγ" },
    { COLL_ALLREDUCE, COLL_ALGO_SWING, "Swing (NSDI'24): Rabenseifner's halving and doubling, but step s pairs ranks rho(s) = 1, -1, 3, -5, 11... apart (even ranks forward, odd back), so the biggest exchange is between neighbours.", "2lg·α + 2(p-1)/p·nβ + (p-1)/p·nγ" },
    { COLL_REDUCE_SCATTER, COLL_ALGO_RING, "Block b travels the ring collecting one contribution per hop and ends, complete, at its owner.", "(p-1)α + (p-1)/p·n(β+γ)" },
    { COLL_REDUCE_SCATTER, COLL_ALGO_PAIRWISE, "In step s every rank sends block r+s straight to its owner and reduces its own block arriving from r-s.", "(p-1)α + (p-1)/p·n(β+γ)" },
    { COLL_REDUCE_SCATTER, COLL_ALGO_RECURSIVE_HALVING, "Exchange half of the current window with the partner 2^k away, keep and reduce the half that holds your block (in place).", "lg·α + (p-1)/p·n(β+γ)" },
    { COLL_REDUCE_SCATTERV, COLL_ALGO_RING, "The ring reduce-scatter with per-rank block sizes.", "(p-1)α + (p-1)/p·n(β+γ)" },
    { COLL_REDUCE_SCATTERV, COLL_ALGO_PAIRWISE, "Pairwise exchange with per-rank block sizes.", "(p-1)α + (p-1)/p·n(β+γ)" },
    { COLL_REDUCE_SCATTERV, COLL_ALGO_RECURSIVE_HALVING, "Recursive halving with per-rank block sizes (in place).", "lg·α + (p-1)/p·n(β+γ)" },
    { COLL_REDUCE_SCATTER, COLL_ALGO_SWING, "Swing's halving (partners rho(s) = 1, -1, 3, -5... apart), which leaves each rank the region its step number names, then one step that hands every region to its owner (in place).", "(lg+1)α + (p-1)/p·n(β+γ) + n/p·β" },
    { COLL_REDUCE_SCATTERV, COLL_ALGO_SWING, "Swing's reduce-scatter with per-rank block sizes (in place).", "(lg+1)α + (p-1)/p·n(β+γ) + n/p·β" },
    { COLL_ALLGATHER, COLL_ALGO_RING, "Each rank forwards the block it received last step to its right neighbour; p-1 steps.", "(p-1)α + (p-1)/p·nβ" },
    { COLL_ALLGATHER, COLL_ALGO_RECURSIVE_DOUBLING, "In step k swap everything gathered so far with the rank 2^k away: the blocks held double each step.", "lg·α + (p-1)/p·nβ" },
    { COLL_ALLGATHER, COLL_ALGO_BRUCK, "Blocks rotated so your own comes first; in step k send the first 2^k blocks to r-2^k and append those of r+2^k; rotate back at the end. Any p, no fold.", "lg·α + (p-1)/p·nβ" },
    { COLL_ALLGATHER, COLL_ALGO_SWING, "One step that hands each rank's block to the rank its number names, then Swing's doubling (partners rho(s) apart, far to near).", "(lg+1)α + (p-1)/p·nβ + n/p·β" },
    { COLL_ALLGATHERV, COLL_ALGO_RING, "The ring all-gather with per-rank block sizes.", "(p-1)α + (p-1)/p·nβ" },
    { COLL_ALLGATHERV, COLL_ALGO_RECURSIVE_DOUBLING, "Recursive doubling with per-rank block sizes.", "lg·α + (p-1)/p·nβ" },
    { COLL_ALLGATHERV, COLL_ALGO_BRUCK, "Bruck with per-rank block sizes.", "lg·α + (p-1)/p·nβ" },
    { COLL_ALLGATHERV, COLL_ALGO_SWING, "Swing's all-gather with per-rank block sizes.", "(lg+1)α + (p-1)/p·nβ + n/p·β" },
    { COLL_BROADCAST, COLL_ALGO_BINOMIAL, "Every rank that has the data passes it on, halving the distance each step: the holders double.", "lg(α+nβ)" },
    { COLL_BROADCAST, COLL_ALGO_SCATTER_ALLGATHER, "Van de Geijn: scatter the blocks down a binomial tree, then ring all-gather them.", "(lg+p-1)α + 2(p-1)/p·nβ" },
    { COLL_BROADCAST, COLL_ALGO_PIPELINED_CHAIN, "A chain from the root; the vector in chunks, each link forwarding one chunk while receiving the next.", "(p-2+C)(α+nβ/C)" },
    { COLL_BROADCAST, COLL_ALGO_DOUBLE_TREE, "The double binary tree's pass down, counted from the root: tree 0 carries the first half of the vector in chunks, tree 1 the second; the root tops tree 0 and hands tree 1's half to its top in a third step per round (n bytes per rank).", "≈(C+2lg)(α+nβ/C)" },
    { COLL_BROADCAST, COLL_ALGO_BINE, "A Bine tree (SC'25): the binomial tree with edges rho(s) = 1, -1, 3, -5... ranks long, taken far to near, so the many late messages are the short ones; ranks past the largest power of two get it last.", "lg(α+nβ)" },
    { COLL_REDUCE, COLL_ALGO_BINOMIAL, "The binomial tree towards the root: a rank sends its partial result up once its subtree is done.", "lg(α+nβ+nγ)" },
    { COLL_REDUCE, COLL_ALGO_REDUCE_SCATTER_GATHER, "Rabenseifner's reduce: recursive-halving reduce-scatter, then a binomial gather of the reduced pieces to the root.", "2lg·α + 2(p-1)/p·nβ + (p-1)/p·nγ" },
    { COLL_REDUCE, COLL_ALGO_DOUBLE_TREE, "The double binary tree's pass up, counted from the root: each tree reduces half the vector in chunks; tree 1's top hands its half to the root in a third step per round, where the root's own half joins (n bytes per rank).", "≈(C+2lg)(α+nβ/C) + nγ" },
    { COLL_REDUCE, COLL_ALGO_LINEAR, "The root receives each rank's vector in turn and folds it in; the others only send (what runs when non-roots pass no result buffer).", "(p-1)(α+nβ+nγ)" },
    { COLL_REDUCE, COLL_ALGO_BINE, "The Bine tree towards the root: the broadcast's tree backwards, each rank folding in its children's partial results before passing its own up.", "lg(α+nβ+nγ)" },
    { COLL_SCAN, COLL_ALGO_LINEAR, "A chain: rank s hands its prefix to s+1, which folds it in on the left of its own.", "(p-1)(α+nβ+nγ)" },
    { COLL_SCAN, COLL_ALGO_RECURSIVE_DOUBLING, "Hillis and Steele: in step k each rank sends its partial prefix 2^k ranks on and folds the one arriving from 2^k back.", "lg·(α+nβ+nγ)" },
    { COLL_EXSCAN, COLL_ALGO_LINEAR, "The chain scan, then every rank hands its inclusive prefix one rank on, replacing the receiver's own.", "(p-1)(α+nβ+nγ) + α+nβ" },
    { COLL_EXSCAN, COLL_ALGO_RECURSIVE_DOUBLING, "The doubling scan, then the same one-rank shift.", "lg·(α+nβ+nγ) + α+nβ" },
    { COLL_GATHERV, COLL_ALGO_LINEAR, "The root receives each rank's block (its own size) in turn.", "(p-1)α + nβ" },
    { COLL_GATHERV, COLL_ALGO_BINOMIAL, "The binomial gather with per-rank block sizes.", "lg·α + (p-1)/p·nβ" },
    { COLL_SCATTERV, COLL_ALGO_LINEAR, "The root sends each rank its block (its own size) in turn.", "(p-1)α + nβ" },
    { COLL_SCATTERV, COLL_ALGO_BINOMIAL, "The binomial scatter with per-rank block sizes.", "lg·α + (p-1)/p·nβ" },
    { COLL_GATHER, COLL_ALGO_LINEAR, "The root receives each rank's block in turn.", "(p-1)(α+nβ/p)" },
    { COLL_GATHER, COLL_ALGO_BINOMIAL, "A binomial tree: each rank forwards the blocks of its whole subtree to its parent.", "lg·α + (p-1)/p·nβ" },
    { COLL_SCATTER, COLL_ALGO_LINEAR, "The root sends each rank its block in turn.", "(p-1)(α+nβ/p)" },
    { COLL_SCATTER, COLL_ALGO_BINOMIAL, "A binomial tree: each rank passes on the blocks of the subtree below its child.", "lg·α + (p-1)/p·nβ" },
    { COLL_ALLTOALL, COLL_ALGO_PAIRWISE, "In step s send block r+s to rank r+s and receive from rank r-s.", "(p-1)α + (p-1)/p·nβ" },
    { COLL_ALLTOALL, COLL_ALGO_BRUCK, "Rotate; in step k every block whose index has bit k set moves 2^k ranks on (strided, packed into one message); unrotate.", "lg·α + lg·(n/2)β" },
    { COLL_ALLTOALLV, COLL_ALGO_PAIRWISE, "Pairwise exchange with a block size per pair (row r of the counts matrix out, column r in).", "(p-1)α + (p-1)/p·nβ" },
    { COLL_ALLREDUCE, COLL_ALGO_DISSEMINATION, "A small call: every rank's vector reaches every rank in the barrier's pattern (step k: to r+2^k, from r-2^k, the blocks gathered so far), in the request's own room; then each rank reduces the p vectors in rank order. With the call checks on, these steps are the check rounds themselves.", "lg·α + (p-1)n(β+γ)" },
    { COLL_REDUCE_SCATTER, COLL_ALGO_DISSEMINATION, "A small call: every rank's whole vector reaches every rank by dissemination; each then reduces its own block of the p vectors in rank order.", "lg·α + (p-1)n(β+γ)" },
    { COLL_ALLGATHER, COLL_ALGO_DISSEMINATION, "A small call: Bruck's all-gather in the request's room (block j holds rank r-j's); each rank copies the p blocks out in rank order.", "lg·α + (p-1)/p·nβ" },
    { COLL_BROADCAST, COLL_ALGO_DISSEMINATION, "A small call: the root's vector spreads by dissemination with every rank's (empty) block; each non-root copies the root's out.", "lg·α + (p-1)nβ" },
    { COLL_REDUCE, COLL_ALGO_DISSEMINATION, "A small call: every vector reaches every rank by dissemination; the root reduces them in rank order.", "lg·α + (p-1)n(β+γ)" },
    { COLL_GATHER, COLL_ALGO_DISSEMINATION, "A small call: Bruck's all-gather in the room; the root copies the p blocks out.", "lg·α + (p-1)/p·nβ" },
    { COLL_SCATTER, COLL_ALGO_DISSEMINATION, "A small call: the root's whole vector spreads by dissemination; each rank copies its own block out of the root's.", "lg·α + (p-1)nβ" },
    { COLL_ALLTOALL, COLL_ALGO_DISSEMINATION, "A small call: every rank's whole send buffer reaches every rank by dissemination; each copies out the block each rank meant for it.", "lg·α + (p-1)nβ" },
    { COLL_BARRIER, COLL_ALGO_DISSEMINATION, "In step k signal r+2^k and wait for r-2^k: after lg p steps everyone has heard from everyone.", "lg·α" },
    { COLL_ALLREDUCE, COLL_ALGO_REVERSED_BRUCK, "The reversed Bruck reduce-scatter on dst, blocks rotated so your own comes first, then the Bruck all-gather; rotate back. Ring's bytes in 2⌈lg p⌉ rounds for any p, no fold.", "2lg·α + 2(p-1)/p·nβ + (p-1)/p·nγ" },
    { COLL_REDUCE_SCATTER, COLL_ALGO_REVERSED_BRUCK, "The Bruck all-gather backwards (NCCL's PAT): in round k = lg-1 .. 0 pass your partial sums of the blocks r+2^k .. to rank r+2^k and fold in those of your own range from r-2^k. Any p, no fold, in place.", "lg·α + (p-1)/p·n(β+γ)" },
    { COLL_REDUCE_SCATTERV, COLL_ALGO_REVERSED_BRUCK, "The reversed Bruck reduce-scatter with per-rank block sizes (in place).", "lg·α + (p-1)/p·n(β+γ)" },
};

static const algo_text *text_of(coll_kind k, coll_algo a)
{
    size_t i;
    for (i = 0; i < sizeof texts / sizeof texts[0]; i++)
        if (texts[i].kind == k && texts[i].algo == a) return &texts[i];
    return 0;
}

static int fail_count;

/* ---- the hierarchical forms (coll_hier.h), drawn by tools/hier_trace.c ------ */
typedef struct hier_pic { coll_kind kind; int hosts, local; const char *idea; } hier_pic;
static const hier_pic hier_pics[] = {
    { COLL_ALLREDUCE, 2, 3, "Reduce-scatter inside each host, all-reduce across hosts on each rank's shard (a host's L ranks share the traffic between hosts, each 1/L of it), all-gather inside." },
    { COLL_ALLREDUCE, 4, 2, "The same on four hosts of two: the across phase is an all-reduce over four ranks, one per host, on a half-size shard." },
    { COLL_REDUCE_SCATTER, 2, 3, "Reduce-scatter inside each host (each rank keeps the sum of its host's blocks for one local index), then reduce-scatter across hosts among the ranks of one local index." },
    { COLL_ALLGATHER, 2, 3, "All-gather across hosts among the ranks of one local index, then all-gather inside each host, and a local permutation into world rank order." },
    { COLL_BROADCAST, 2, 3, "Broadcast across hosts among the root's local-index peers (one message per host), then inside each host from that rank." },
    { COLL_REDUCE, 2, 3, "Reduce inside each host onto the rank with the root's local index, then reduce across hosts onto the root." },
    { COLL_GATHER, 2, 3, "Gather inside each host onto the rank with the root's local index, then one gatherv across hosts onto the root (each host's L blocks in one message)." },
    { COLL_SCATTER, 2, 3, "One scatterv across hosts from the root to its local-index peers (each gets its host's L blocks), then scatter inside each host." },
    { COLL_ALLTOALL, 2, 3, "All-to-all inside each host, a local transpose, then all-to-all across hosts among the ranks of one local index, and a permutation." },
    { COLL_BARRIER, 2, 3, "A barrier inside each host, one across among the ranks of local index 0, and one inside again." },
};

/* ---- one SVG ----------------------------------------------------------------- */
#define LANE_H 40
#define COL_W  132
#define LEFT   46
#define TOP    54

static void cfg_for(sim_cfg *c, coll_kind k, coll_algo a, int p)
{
    int i;
    memset(c, 0, sizeof *c);
    c->kind = k; c->algo = a; c->p = p; c->group = 2; c->scratch = 4096;
    c->dtype = COLL_INT32; c->op = COLL_SUM;
    c->n = k == COLL_ALLREDUCE || k == COLL_REDUCE || k == COLL_BROADCAST || sim_is_v(k) ? (size_t)(2 * p) : 2;
    if (sim_is_v(k)) for (i = 0; i < p; i++) c->counts[i] = 1 + (size_t)(i % 2);
    if (k == COLL_ALLTOALLV) for (i = 0; i < p * p; i++) c->counts[i] = 1 + (size_t)((i / p + i % p) % 2);
    if (a == COLL_ALGO_PIPELINED_TREE || a == COLL_ALGO_PIPELINED_CHAIN || a == COLL_ALGO_DOUBLE_TREE) { c->n = 48; c->scratch = 128; }
    if (a == COLL_ALGO_RECURSIVE_HALVING || (k == COLL_REDUCE_SCATTERV && a == COLL_ALGO_RING)) c->inplace = 1;
    if (coll__entry_of(k, a) && (coll__entry_of(k, a)->needs & COLL__IN_PLACE)) c->inplace = 1;   /* runs in place only */
}

/* Labels already placed in this picture: boxes of [x0, x1] x [y0, y1];
   and its arrows, (x1, y1) -> (x2, y2). */
static double boxes[4096][4];
static int nboxes, segs[4096][4], nsegs;

static double overlap(const double *a, const double *b)
{
    double w = (a[1] < b[1] ? a[1] : b[1]) - (a[0] > b[0] ? a[0] : b[0]);
    double h = (a[3] < b[3] ? a[3] : b[3]) - (a[2] > b[2] ? a[2] : b[2]);
    return w > 0 && h > 0 ? w * h : 0;
}

/* Where along arrow `self`, (x1,y1)->(x2,y2), a label of `chars`
   characters goes: the first of a few points along it (a quarter of the
   way first) whose box meets no label placed so far and no other arrow,
   else the one that meets them least. Arrows that cross or start side by
   side (the ring's wrap, Rabenseifner's exchanges) would otherwise print
   their labels over each other. */
static void place_label(int self, int x1, int y1, int x2, int y2, int chars, double *bx, double *by)
{
    static const double at[] = { 0.25, 0.42, 0.12, 0.58, 0.34, 0.5, 0.18, 0.66, 0.72 };
    double best = -1, w = 6.2 * chars + 2, b[4];
    size_t i;
    int j;
    for (i = 0; i < sizeof at / sizeof at[0]; i++) {
        double x = x1 + (x2 - x1) * at[i], y = y1 + (y2 - y1) * at[i] - 3, o = 0;
        b[0] = x - 1; b[1] = x + w; b[2] = y - 9; b[3] = y + 2;
        for (j = 0; j < nboxes; j++) o += overlap(b, boxes[j]);
        for (j = 0; j < nsegs; j++) {          /* another arrow through the box */
            int q;
            if (j == self) continue;
            for (q = 0; q <= 40; q++) {
                double px = segs[j][0] + (segs[j][2] - segs[j][0]) * q / 40.0, py = segs[j][1] + (segs[j][3] - segs[j][1]) * q / 40.0;
                if (px >= b[0] && px <= b[1] && py >= b[2] && py <= b[3]) o += 20;
            }
        }
        if (best < 0 || o < best) { best = o; *bx = x; *by = y; }
        if (o == 0) break;
    }
    if (nboxes < 4096) {
        boxes[nboxes][0] = *bx - 1; boxes[nboxes][1] = *bx + w; boxes[nboxes][2] = *by - 9; boxes[nboxes][3] = *by + 2;
        nboxes++;
    }
}

/* An SVG's opening tag (its data-diagram name for the page's checks). */
static void svg_open(FILE *o, int W, int H, const char *name)
{
    fprintf(o, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "font-family=\"DejaVu Sans, Arial, sans-serif\" data-diagram=\"%s\">\n", W, H, W, H, name);
}

/* Every diagram's arrow heads (ac: a copy, ar: a reduction) and its white
   ground: one visual language for the flat and the hierarchical pictures. */
static void svg_marks(FILE *o, int W, int H)
{
    fprintf(o, "<defs><marker id=\"ac\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto\">"
               "<path d=\"M0,0 L10,5 L0,10 z\" fill=\"#2166ac\"/></marker>"
               "<marker id=\"ar\" viewBox=\"0 0 10 10\" refX=\"5\" refY=\"5\" markerWidth=\"8\" markerHeight=\"8\">"
               "<circle cx=\"5\" cy=\"5\" r=\"4\" fill=\"#fff\" stroke=\"#b2182b\" stroke-width=\"1.5\"/>"
               "<path d=\"M5,2.5 V7.5 M2.5,5 H7.5\" stroke=\"#b2182b\" stroke-width=\"1.3\"/></marker></defs>\n");
    fprintf(o, "<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n", W, H);
}

static int draw(FILE *o, coll_kind k, coll_algo a, int p)
{
    static sim s;
    static sim_msg all[4096];
    static sim_msg ev[SIM_MAX_QUEUED];
    int nall = 0, nev, i, rounds = 0, r, W, H;
    sim_cfg c;
    char lab[48];
    cfg_for(&c, k, a, p);
    if (sim_init(&s, &c) != 0) { fprintf(stderr, "diagrams: %s/%s p=%d: %s\n", coll_kind_name(k), coll_algo_name(a), p, s.err); return -1; }
    sim_start(&s);
    while (sim_round(&s, ev, &nev)) {
        for (i = 0; i < nev && nall < 4096; i++) all[nall++] = ev[i];
        rounds++;
    }
    if (s.deadlock) return -1;
    sim_finish(&s);
    for (r = 0; r < p; r++) {     /* a picture of a wrong schedule helps nobody */
        static double want[SIM_MAX_ELEMS];
        size_t len, j;
        if (!sim_expected(&s, r, want, &len)) continue;
        for (j = 0; j < len; j++)
            if (s.rk[r].arena[s.rk[r].dst_off + j] != want[j]) {
                fprintf(stderr, "diagrams: %s/%s p=%d: rank %d ends wrong\n", coll_kind_name(k), coll_algo_name(a), p, r);
                return -1;
            }
    }
    W = LEFT + rounds * COL_W + 20;
    nboxes = 0;
    H = TOP + p * LANE_H + 16;
    snprintf(lab, sizeof lab, "%s-%s-p%d", coll_kind_name(k), coll_algo_name(a), p);
    svg_open(o, W, H, lab);
    fprintf(o, "<title>%s, %s, p = %d</title>\n", coll_kind_name(k), coll_algo_name(a), p);
    svg_marks(o, W, H);
    fprintf(o, "<text x=\"6\" y=\"16\" font-size=\"13\" font-weight=\"bold\">%s / %s, p = %d</text>\n",
            coll_kind_name(k), coll_algo_name(a), p);
    for (i = 0; i < rounds; i++) {
        const char *ph = sim_phase(&s, i);
        int x = LEFT + i * COL_W;
        if (i % 2) fprintf(o, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#f4f4f4\"/>\n", x, TOP - 16, COL_W, p * LANE_H + 16);
        fprintf(o, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">step %d</text>\n", x + COL_W / 2, TOP - 28, i);
        if (*ph) fprintf(o, "<text x=\"%d\" y=\"%d\" font-size=\"9\" fill=\"#555\" text-anchor=\"middle\">%s</text>\n", x + COL_W / 2, TOP - 18, ph);
    }
    for (r = 0; r < p; r++) {
        int y = TOP + r * LANE_H + LANE_H / 2;
        fprintf(o, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#999\" stroke-width=\"1\"/>\n", LEFT, y, W - 10, y);
        fprintf(o, "<text x=\"8\" y=\"%d\" font-size=\"12\">r%d</text>\n", y + 4, r);
        if ((k == COLL_BROADCAST || k == COLL_REDUCE || k == COLL_GATHER || k == COLL_SCATTER) && r == c.root)
            fprintf(o, "<text x=\"24\" y=\"%d\" font-size=\"8\" fill=\"#555\">root</text>\n", y + 4);
    }
    for (i = 0; i < nall; i++) {      /* the arrows, then their labels clear of them */
        const sim_msg *m = &all[i];
        segs[i][0] = LEFT + m->sent_round * COL_W + 12; segs[i][1] = TOP + m->from * LANE_H + LANE_H / 2;
        segs[i][2] = LEFT + m->recv_round * COL_W + COL_W - 14; segs[i][3] = TOP + m->to * LANE_H + LANE_H / 2;
        fprintf(o, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"1.6\" marker-end=\"url(#%s)\"/>\n",
                segs[i][0], segs[i][1], segs[i][2], segs[i][3], m->reduce ? "#b2182b" : "#2166ac", m->reduce ? "ar" : "ac");
    }
    nsegs = nall;
    for (i = 0; i < nall; i++) {
        const sim_msg *m = &all[i];
        int x1 = segs[i][0], y1 = segs[i][1], x2 = segs[i][2], y2 = segs[i][3];
        if (k == COLL_BARRIER) snprintf(lab, sizeof lab, "signal");
        else sim_label(&s, m, lab, sizeof lab);
        {   /* the label where it overlaps no label placed before it */
            double bx = 0, by = 0;
            place_label(i, x1, y1, x2, y2, (int)strlen(lab) + (m->reduce ? 1 : 0), &bx, &by);
            fprintf(o, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"10\" fill=\"%s\" stroke=\"#fff\" stroke-width=\"3\" paint-order=\"stroke\">%s%s</text>\n",
                    bx, by, m->reduce ? "#b2182b" : "#2166ac", m->reduce ? "+" : "", lab);
        }
    }
    fprintf(o, "</svg>\n");
    return 0;
}

/* ---- the chart: predicted all-reduce time against size --------------------- */
/* The model's time for all-reduce with `algo` over `bytes` (float32) on
   comm's ranks: the library's own cost function of that row, on the plan
   coll_start would make (chunks from comm's segment); -1 where the library
   would not run it (a small call past its room, say). The planner only
   looks at the buffers' addresses, so they are made up. */
static double model(const coll_comm *comm, coll_algo algo, double bytes)
{
    coll_args a;
    coll__plan pl;
    coll__step st;
    size_t es = 0;
    const char *why;
    uintptr_t base = (uintptr_t)1 << 20;
    double t;
    memset(&a, 0, sizeof a);
    a.kind = COLL_ALLREDUCE; a.algo = algo; a.dtype = COLL_FLOAT32; a.op = COLL_SUM;
    a.count = (size_t)(bytes / 4) ? (size_t)(bytes / 4) : 1;
    a.src = (void *)base; a.dst = (void *)(base + ((uintptr_t)1 << 30));
    if (coll__plan_args(comm, &a, &pl, &es, &why) != COLL_OK) return -1;
    if (coll__pick(comm, 0, &a, &pl, es, &st, &why) != COLL_OK || !pl.row || !pl.row->cost) return -1;
    t = (double)pl.row->cost(&pl, (coll__real)coll__total_bytes(&pl, es), &comm->tune);
    return t >= (double)COLL__NEVER ? -1 : t;
}

static void chart(FILE *o, int p)
{
    static const coll_algo algos[] = { COLL_ALGO_NAIVE, COLL_ALGO_RING, COLL_ALGO_TREE, COLL_ALGO_RECURSIVE_DOUBLING,
                                       COLL_ALGO_RABENSEIFNER, COLL_ALGO_PIPELINED_TREE, COLL_ALGO_DOUBLE_TREE,
                                       COLL_ALGO_REVERSED_BRUCK, COLL_ALGO_DISSEMINATION };
    static const char *colors[] = { "#7f7f7f", "#1f77b4", "#2ca02c", "#ff7f0e", "#d62728", "#9467bd", "#8c564b",
                                    "#e377c2", "#17becf" };
    static unsigned char scratch[1 << 17];
    coll_comm comm;
    coll_port port;
    coll_args a;
    int W = 800, H = 500, L = 70, R = 210, T = 48, B = 100, i, j, other = 0;
    double lo = 3, hi = 28.0001, ylo = -7, yhi = 0;      /* log2 bytes, log10 seconds */
    memset(&port, 0, sizeof port);
    port.send = sim__nop_send; port.recv = sim__nop_recv;
    coll_init(&comm, 0, p, &port, scratch, sizeof scratch);
    fprintf(o, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "font-family=\"DejaVu Sans, Arial, sans-serif\" data-diagram=\"allreduce-model-p%d\">\n", W, H, W, H, p);
    fprintf(o, "<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n", W, H);
    fprintf(o, "<text x=\"%d\" y=\"18\" font-size=\"13\" font-weight=\"bold\">all-reduce, p = %d: the α-β-γ model's predicted time</text>\n"
               "<text x=\"%d\" y=\"34\" font-size=\"11\" fill=\"#444\">α = %.2g s, β = %.2g s/B, γ = %.2g s/B (coll_init's defaults); "
               "each curve is its row's cost function in coll.h</text>\n",
            L, p, L, comm.tune.alpha, comm.tune.beta, comm.tune.gamma);
    for (i = (int)lo; i <= (int)hi; i += 2) {
        double x = L + (i - lo) / (hi - lo) * (W - L - R);
        const char *u = i >= 30 ? "GiB" : i >= 20 ? "MiB" : i >= 10 ? "KiB" : "B";
        fprintf(o, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>"
                   "<text x=\"%.1f\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">%d %s</text>\n",
                x, T, x, H - B, x, H - B + 14, 1 << (i % 10), u);
    }
    for (i = (int)ylo; i <= (int)yhi; i++) {
        double y = T + (yhi - i) / (yhi - ylo) * (H - T - B);
        fprintf(o, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                   "<text x=\"%d\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">1e%d s</text>\n",
                L, y, W - R, y, L - 4, y + 3, i);
    }
    fprintf(o, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">message size (bytes, float32)</text>\n",
            L + (W - L - R) / 2, H - B + 30);
    for (j = 0; j < (int)(sizeof algos / sizeof algos[0]); j++) {
        int open = 0;                    /* a curve breaks where the row does not run */
        for (i = 0; i <= 100; i++) {
            double lb = lo + (hi - lo) * i / 100, t = model(&comm, algos[j], pow(2, lb)), y;
            if (t <= 0) { if (open) fprintf(o, "\"/>\n"); open = 0; continue; }
            y = log10(t);
            if (y < ylo) y = ylo;
            if (y > yhi) y = yhi;
            if (!open) fprintf(o, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"", colors[j],
                               algos[j] == COLL_ALGO_DISSEMINATION ? " stroke-dasharray=\"5,3\"" : "");
            open = 1;
            fprintf(o, "%.1f,%.1f ", L + (lb - lo) / (hi - lo) * (W - L - R), T + (yhi - y) / (yhi - ylo) * (H - T - B));
        }
        if (open) fprintf(o, "\"/>\n");
        fprintf(o, "<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"%s\">%s</text>\n",
                W - R + 10, T + 14 + 16 * j, colors[j], coll_algo_name(algos[j]));
    }
    fprintf(o, "<text x=\"%d\" y=\"%d\" font-size=\"9\" fill=\"#555\">dashed: a small call, as far as it fits;</text>\n"
               "<text x=\"%d\" y=\"%d\" font-size=\"9\" fill=\"#555\">AUTO takes it for nothing where it</text>\n"
               "<text x=\"%d\" y=\"%d\" font-size=\"9\" fill=\"#555\">rides in the call checks' rounds</text>\n",
            W - R + 10, T + 14 + 16 * j, W - R + 10, T + 26 + 16 * j, W - R + 10, T + 38 + 16 * j);
    /* what AUTO picks at each size (coll_choose, the library's own planner) */
    fprintf(o, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"end\">AUTO</text>\n", L - 4, H - B + 52);
    memset(&a, 0, sizeof a);
    a.kind = COLL_ALLREDUCE; a.dtype = COLL_FLOAT32; a.op = COLL_SUM;
    for (i = 0; i < 100; i++) {
        double lb = lo + (hi - lo) * (i + 0.5) / 100;
        coll_algo pick;
        const char *col = "#000";
        a.count = (size_t)(pow(2, lb) / 4);
        if (a.count == 0) a.count = 1;
        pick = coll_choose(&comm, &a);
        for (j = 0; j < (int)(sizeof algos / sizeof algos[0]); j++) if (algos[j] == pick) col = colors[j];
        if (*col == '#' && strcmp(col, "#000") == 0) other = 1;
        fprintf(o, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"12\" fill=\"%s\" data-pick=\"%s\"><title>%s</title></rect>\n",
                L + (double)i / 100 * (W - L - R), H - B + 42, (double)(W - L - R) / 100 + 0.3, col,
                coll_algo_name(pick), coll_algo_name(pick));
    }
    fprintf(o, "<text x=\"%d\" y=\"%d\" font-size=\"10\" fill=\"#555\">the bar: what coll_choose (AUTO) runs at that size, coloured as the curves%s</text>\n",
            L, H - B + 72, other ? " (black: none of them)" : "");
    fprintf(o, "</svg>\n");
}

/* ---- the page ------------------------------------------------------------------ */
static FILE *open_out(const char *dir, const char *name)
{
    char path[512];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "w");
    if (!f) { fprintf(stderr, "diagrams: cannot write %s\n", path); exit(1); }
    return f;
}

/* The hierarchical section of the page: one picture per hier_pics row,
   which tools/hier_trace.c --svg writes into the same folder (make
   diagrams runs both). */
static void hier_section(FILE *page)
{
    size_t i;
    fprintf(page, "<h2 id=\"hier\">Hierarchical forms (coll_hier.h): hosts, then ranks inside them</h2>\n"
                  "<p class=\"idea\">Drawn from a real run of coll_hier.h (its ranks threads over the threads port, "
                  "ranks host-major, call checks off), each message told by coll.h's observer on the sub-communicators: "
                  "hosts are boxes around their ranks' lanes, columns are the phases' steps, "
                  "<b>dashed thick arrows cross between hosts</b>, solid ones stay inside a host; red and blue as above. "
                  "<code>make trace-hier COLL=allreduce HOSTS=2 LOCAL=3</code> prints the same run phase by phase, "
                  "every rank's buffer and the bytes that cross, checked against a plain loop (docs/hosts.md).</p>\n");
    for (i = 0; i < sizeof hier_pics / sizeof hier_pics[0]; i++) {
        const hier_pic *h = &hier_pics[i];
        const char *k = coll_kind_name(h->kind);
        fprintf(page, "<h3 id=\"hier-%s-%dx%d\">%s, %d hosts × %d ranks</h3>\n<p class=\"idea\">%s</p>\n"
                      "<div class=\"pics\"><img src=\"svg/hier-%s-%dx%d.svg\" alt=\"hierarchical %s, %d x %d\" class=\"diagram\"></div>\n",
                k, h->hosts, h->local, k, h->hosts, h->local, h->idea, k, h->hosts, h->local, k, h->hosts, h->local);
    }
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "build/diagrams";
    static const int ps[2] = { 4, 6 };
    char sub[512], name[160];
    FILE *page, *f;
    size_t e;
    int k, i, nsvg = 0;
    snprintf(sub, sizeof sub, "%s/svg", dir);
    if ((mkdir(dir, 0777) && errno != EEXIST) || (mkdir(sub, 0777) && errno != EEXIST)) {
        fprintf(stderr, "diagrams: cannot make %s\n", sub);
        return 1;
    }
    page = open_out(dir, "index.html");
    fprintf(page, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
                  "<title>coll: every algorithm, step by step</title>\n<style>\n"
                  "body{font-family:DejaVu Sans,Arial,sans-serif;max-width:1400px;margin:1em auto;padding:0 1em;color:#222}\n"
                  "h2{border-bottom:1px solid #ccc;margin-top:2em}h3{margin-bottom:.2em}\n"
                  ".idea{margin:.2em 0}.cost{font-family:DejaVu Sans Mono,monospace;color:#444;margin:.2em 0 .5em}\n"
                  ".pics{display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start}.pics img{border:1px solid #ddd;max-width:100%%}\n"
                  "#status{color:#555;font-size:small}\n</style></head><body>\n");
    fprintf(page, "<h1>coll: every algorithm, step by step</h1>\n"
                  "<p>Each picture is drawn from the algorithm's schedule, the pure function the library runs: "
                  "ranks are lanes, steps are columns, each message an arrow from the sender's step to the receiver's, "
                  "labelled with the block it carries (<code>b2</code> = block 2, <code>b0-2</code> = blocks 0 to 2, "
                  "<code>all</code> = the whole vector, <code>[a:b]</code> = elements a to b-1). "
                  "<span style=\"color:#b2182b\">Red arrows ending in a circled + are reduced into the receiver's data</span>; "
                  "<span style=\"color:#2166ac\">blue arrows are copied</span>. p = 6 is not a power of two: the algorithms "
                  "that need one fold it (the first and last steps). Costs: p ranks, n bytes, α per message, β per byte, "
                  "γ per byte reduced, lg = ⌈log₂ p⌉, C = pipeline chunks. <code>make trace</code> shows the same steps "
                  "with every rank's buffer, and <code>make stepper</code> a page to step through them, every rank's values on screen.</p>\n<p id=\"status\">(images not checked yet)</p>\n");
    fprintf(page, "<h2 id=\"model\">All-reduce: predicted time against size</h2>\n"
                  "<div class=\"pics\"><img src=\"svg/allreduce-model-p8.svg\" alt=\"all-reduce cost model, p = 8\" class=\"diagram\"></div>\n");
    f = open_out(sub, "allreduce-model-p8.svg");
    chart(f, 8);
    fclose(f);
    nsvg++;
    for (k = 0; k < COLL_KIND_COUNT; k++) {
        int first = 1;
        for (e = 0; coll__row_at(e); e++) {
            const coll__entry *en = coll__row_at(e);
            const algo_text *t;
            if ((int)en->kind != k || !en->f) continue;
            if (first) { fprintf(page, "<h2 id=\"%s\">%s</h2>\n", coll_kind_name((coll_kind)k), coll_kind_name((coll_kind)k)); first = 0; }
            t = text_of(en->kind, en->algo);
            fprintf(page, "<h3 id=\"%s-%s\">%s</h3>\n<p class=\"idea\">%s</p>\n<p class=\"cost\">cost: %s</p>\n<div class=\"pics\">\n",
                    coll_kind_name(en->kind), coll_algo_name(en->algo), coll_algo_name(en->algo),
                    t ? t->idea : "", t ? t->cost : "");
            if (!t) { fprintf(stderr, "diagrams: no text for %s/%s\n", coll_kind_name(en->kind), coll_algo_name(en->algo)); fail_count++; }
            for (i = 0; i < 2; i++) {
                snprintf(name, sizeof name, "%s-%s-p%d.svg", coll_kind_name(en->kind), coll_algo_name(en->algo), ps[i]);
                f = open_out(sub, name);
                if (draw(f, en->kind, en->algo, ps[i]) != 0) fail_count++;
                fclose(f);
                nsvg++;
                fprintf(page, "<img src=\"svg/%s\" alt=\"%s %s, p = %d\" class=\"diagram\">\n", name,
                        coll_kind_name(en->kind), coll_algo_name(en->algo), ps[i]);
            }
            fprintf(page, "</div>\n");
        }
    }
    hier_section(page);
    /* the page checks its own pictures once loaded, and says so */
    fprintf(page, "<script>\nwindow.addEventListener('load', function () {\n"
                  "  var imgs = document.querySelectorAll('img.diagram'), ok = 0, bad = [];\n"
                  "  for (var i = 0; i < imgs.length; i++) {\n"
                  "    if (imgs[i].complete && imgs[i].naturalWidth > 0) ok++; else bad.push(imgs[i].getAttribute('src'));\n"
                  "  }\n"
                  "  var s = document.getElementById('status');\n"
                  "  s.textContent = ok + ' of ' + imgs.length + ' diagrams rendered';\n"
                  "  s.setAttribute('data-rendered', ok); s.setAttribute('data-total', imgs.length);\n"
                  "  if (bad.length) console.error('diagrams not rendered: ' + bad.join(' '));\n"
                  "});\n</script>\n</body></html>\n");
    fclose(page);
    printf("diagrams: %d SVGs and index.html in %s\n", nsvg, dir);
    return fail_count != 0;
}
