/* bench_gloo.cc - Gloo's all-reduce over TCP on loopback, measured like coll

       build/bench/bench_gloo -n 2,4 -s quick

   Ranks are forked processes; they meet through a gloo FileStore in a
   fresh temporary directory and talk over Gloo's TCP transport on
   127.0.0.1. Algorithms: AllreduceRing, AllreduceRingChunked and
   AllreduceHalvingDoubling on float32 with sum. (AllreduceBcube is left
   out: it has returned a wrong sum in a timing loop on this machine.)

   Every (algorithm, size) gets its own context and so its own TCP
   connections: Gloo sizes a connection's send buffer from its first
   message, and a connection first used for 8 B later stalls on delayed
   ACKs with 8 MiB messages - a property of reusing connections across
   sizes, not of the algorithm.

   Gloo's all-reduce is in place, so back-to-back calls feed each other:
   after k calls every rank holds p^(k-1) x S, S being the sum of the
   inputs. The inputs are small integers and k is kept small enough that
   this stays below 2^24, so it is exact in float32 and each block of k
   back-to-back calls ends with a bit-exact check - which also checks
   every call of the block, as an error in any call would carry into the
   end. Between blocks (untimed) the inputs are restored and the ranks
   meet at a barrier. */
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bench_common.h"
#include "bench_shmctl.h"

namespace {

const char *const algo_names[] = {"ring", "ring_chunked", "halving_doubling"};
const int n_algos = 3;

struct config {
    std::string dir;                   // FileStore directory
    std::vector<size_t> sizes;
    std::vector<int> algos;
    bench_shm *shm;
    bench_opts o;
    int p;
};

std::unique_ptr<gloo::Algorithm> make_algo(int a, const std::shared_ptr<gloo::Context> &ctx,
                                           float *buf, int count)
{
    std::vector<float *> ptrs(1, buf);
    switch (a) {
    case 0: return std::unique_ptr<gloo::Algorithm>(new gloo::AllreduceRing<float>(ctx, ptrs, count));
    case 1: return std::unique_ptr<gloo::Algorithm>(new gloo::AllreduceRingChunked<float>(ctx, ptrs, count));
    default: return std::unique_ptr<gloo::Algorithm>(new gloo::AllreduceHalvingDoubling<float>(ctx, ptrs, count));
    }
}

// Calls per block: the most k <= 8 with p^(k-1) * max|S| < 2^24.
int block_len(int p)
{
    double v = 15.0 * p;          // |bench_value| <= 15
    int k = 1;
    while (k < 8 && v * p < 16777216.0) { v *= p; k++; }
    return k;
}

// Wrong elements of buf against p^(k-1) * S.
size_t check(const float *buf, const std::vector<float> &sum, int p, int k)
{
    float scale = 1;
    size_t bad = 0;
    for (int i = 1; i < k; i++) scale *= (float)p;
    for (size_t i = 0; i < sum.size(); i++) bad += buf[i] != sum[i] * scale;
    return bad;
}

int rank_main(int rank, void *arg)
{
    config &cf = *static_cast<config *>(arg);
    bench_shm_rank me = {cf.shm, rank};
    bench_ctl ctl = {&me, bench_shm_barrier, bench_shm_sum, bench_shm_max};
    const int p = cf.p, L = block_len(p);
    int broken = 0;
    try {
        gloo::transport::tcp::attr attr("127.0.0.1");
        auto dev = gloo::transport::tcp::CreateDevice(attr);
        gloo::rendezvous::FileStore fs(cf.dir);
        for (int a : cf.algos) {
            for (size_t bytes : cf.sizes) {
                int count = (int)bench_count(BK_ALLREDUCE, p, bytes);
                std::vector<float> in(count), buf(count), sum(count);
                bench_fill(in.data(), count, rank);
                for (int i = 0; i < count; i++) {
                    float s = 0;
                    for (int r = 0; r < p; r++) s += bench_value(r, i);
                    sum[i] = s;
                }
                std::string prefix = std::string(algo_names[a]) + "-" + std::to_string(bytes);
                gloo::rendezvous::PrefixStore ps(prefix, fs);
                auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, p);
                ctx->setTimeout(std::chrono::seconds(60));
                ctx->connectFullMesh(ps, dev);
                auto alg = make_algo(a, ctx, buf.data(), count);

                // warm-up, checked, and the cost estimate for the loop
                memcpy(buf.data(), in.data(), count * sizeof(float));
                ctl.barrier(ctl.ctx);
                double t0 = bench_now();
                alg->run();
                double est = ctl.max(ctl.ctx, bench_now() - t0);
                double bad = (double)check(buf.data(), sum, p, 1);
                int iters = bench_iters(est, cf.o.target, cf.o.lo, cf.o.hi);
                // BENCH_REPS runs of the timed calls, median run reported,
                // as bench_cell does for everyone else
                double rep[BENCH_REPS];
                int per = iters / BENCH_REPS > 0 ? iters / BENCH_REPS : 1;
                for (int j = 0; j < BENCH_REPS; j++) {
                    double busy = 0;
                    for (int done = 0; done < per;) {
                        int k = per - done < L ? per - done : L;
                        memcpy(buf.data(), in.data(), count * sizeof(float));
                        ctl.barrier(ctl.ctx);
                        t0 = bench_now();
                        for (int i = 0; i < k; i++) alg->run();
                        busy += bench_now() - t0;
                        bad += (double)check(buf.data(), sum, p, k);
                        done += k;
                    }
                    rep[j] = ctl.sum(ctl.ctx, busy / per) / p;
                }
                double t_call = bench_median(rep, BENCH_REPS);
                bad = ctl.sum(ctl.ctx, bad);
                if (rank == 0)
                    bench_row("gloo", "allreduce", algo_names[a], p,
                              bench_bytes(BK_ALLREDUCE, p, count), t_call,
                              bench_busbw_factor(BK_ALLREDUCE, p), bad == 0);
                alg.reset();
                ctx->closeConnections();
            }
        }
    } catch (const std::exception &e) {
        fprintf(stderr, "bench_gloo: rank %d: %s\n", rank, e.what());
        broken = 1;
    }
    return broken;
}

void usage()
{
    fprintf(stderr, "usage: bench_gloo [-n ranks,...] [-s sizes] [-a algo,...] [-T ms]\n"
                    "  algorithms: ring, ring_chunked, halving_doubling (default: all)\n");
}

} // namespace

int main(int argc, char **argv)
{
    config cf;
    std::vector<int> ranks = {2, 4};
    const char *sizes_s = "std";
    cf.o = bench_opts{0.02, 3, 1000, 0, 0};
    for (int i = 0; i < n_algos; i++) cf.algos.push_back(i);
    for (int i = 1; i < argc; i++) {
        std::string f = argv[i];
        if (i + 1 >= argc) { usage(); return 2; }
        const char *v = argv[++i];
        if (f == "-n") {
            int tmp[16], n = bench_parse_ints(v, tmp, 16);
            if (n <= 0) { usage(); return 2; }
            ranks.assign(tmp, tmp + n);
        } else if (f == "-s") {
            sizes_s = v;
        } else if (f == "-T") {
            cf.o.target = atof(v) / 1e3;
        } else if (f == "-a") {
            cf.algos.clear();
            std::string s = v;
            size_t pos = 0;
            while (pos <= s.size()) {
                size_t e = s.find(',', pos);
                std::string tok = s.substr(pos, e == std::string::npos ? std::string::npos : e - pos);
                int a = -1;
                for (int j = 0; j < n_algos; j++) if (tok == algo_names[j]) a = j;
                if (a < 0) { usage(); return 2; }
                cf.algos.push_back(a);
                if (e == std::string::npos) break;
                pos = e + 1;
            }
        } else {
            usage();
            return 2;
        }
    }
    size_t sizes[BENCH_MAX_SIZES];
    int ns = bench_parse_sizes(sizes_s, sizes, BENCH_MAX_SIZES);
    if (ns <= 0) { usage(); return 2; }
    cf.sizes.assign(sizes, sizes + ns);

    int bad = 0;
    for (int p : ranks) {
        char tmpl[] = "/tmp/bench_gloo.XXXXXX";
        if (!mkdtemp(tmpl)) { perror("bench_gloo: mkdtemp"); return 1; }
        cf.dir = tmpl;
        cf.p = p;
        cf.shm = bench_shm_create(p);
        if (!cf.shm) { fprintf(stderr, "bench_gloo: shared control block failed\n"); return 1; }
        if (bench_fork_ranks(p, rank_main, &cf)) {
            fprintf(stderr, "bench_gloo: p=%d: a rank failed\n", p);
            bad = 1;
        }
        bench_shm_destroy(cf.shm);
        std::error_code ec;
        std::filesystem::remove_all(cf.dir, ec);
    }
    return bad;
}
