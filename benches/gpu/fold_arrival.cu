// What a last-arriver fold's arrival costs on its own (nvcc -O3 -arch=sm_90): BLOCKS x THREADS
// threads in one cooperative launch; each block waits 5 us after its own start (so arrivals
// spread over the launch ramp, as a step's last tasks do), stamps %globaltimer, and arrives.
// The fold starts when the scheme below says every block has arrived; the row gives the time
// from the latest block's stamp to the fold's start (median over ROUNDS launches, ns).
//   one:    every block `atom.acq_rel.gpu.add` on one counter; the block that sees the last
//           count runs the fold (vyrescope's last-arriver fold, no spread).
//   spread: 16 sub-counters one 128-byte line apart, block b on b % 16; the last of each
//           sub-counter adds to a top counter; the last there runs the fold (vyrescope's
//           spread fold, both atomics acq_rel).
//   poll:   every block `red.release.gpu.add` on its sub-counter (no return, no round trip);
//           block 0's first warp polls all 16 sub-counters in one load round
//           (`ld.relaxed.gpu`, one lane per word) and runs the fold after `fence.acq_rel.gpu`
//           once each holds its count.
// With BURST=1 every block arrives at the same instant instead (one %globaltimer deadline);
// with DATA=1 (the default) every thread stores one float just before its block arrives.
// THREADS (default 256) sets the block size, so that more blocks fit at once.
// Usage: fold_arrival [ROUNDS] [BLOCKS] [BURST] [DATA] [THREADS]  -> one JSON object per row on stdout.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t check_err_ = (x); if (check_err_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(check_err_)); exit(1); } } while (0)

constexpr int SPREAD = 16;
constexpr int STRIDE = 32;  // words: one 128-byte line per counter

__device__ __forceinline__ unsigned long long now_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ unsigned atom_acq_rel(unsigned* w, unsigned v) {
    unsigned old;
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(w), "r"(v) : "memory");
    return old;
}

// counters: word 0 = one counter / top counter, words STRIDE*(1+j) = sub-counter j.
__global__ void arrive(int scheme, int burst, unsigned* counters, unsigned long long* stamps,
                       unsigned long long* fold, float* data) {
    unsigned long long t0 = now_ns();
    // Burst: every block waits for the same instant (the next multiple of 8.192 us at least
    // 4 us away; the launch ramp is about 1 us), so all arrive together, as the blocks of a
    // step with one task each do.
    unsigned long long until = burst ? ((t0 + 4096) / 8192 + 1) * 8192 : t0 + 5000;
    while (now_ns() < until) {}
    // Like a step's task, every thread stores its result just before the block arrives (the
    // release has to wait for those stores); DATA=0 leaves them out.
    if (data != nullptr) data[blockIdx.x * blockDim.x + threadIdx.x] = (float)(until - t0);
    __syncthreads();
    const unsigned blocks = gridDim.x;
    if (threadIdx.x == 0) stamps[blockIdx.x] = now_ns();
    if (scheme == 0) {
        if (threadIdx.x == 0 && atom_acq_rel(counters, 1) == blocks - 1) fold[0] = now_ns();
    } else if (scheme == 1) {
        if (threadIdx.x == 0) {
            unsigned j = blockIdx.x % SPREAD;
            unsigned n = blocks / SPREAD + (j < blocks % SPREAD ? 1 : 0);
            if (atom_acq_rel(counters + STRIDE * (1 + j), 1) == n - 1
                && atom_acq_rel(counters, 1) == SPREAD - 1) {
                fold[0] = now_ns();
            }
        }
    } else {
        if (threadIdx.x == 0) {
            unsigned* w = counters + STRIDE * (1 + blockIdx.x % SPREAD);
            asm volatile("red.release.gpu.global.add.u32 [%0], 1;" :: "l"(w) : "memory");
        }
        if (blockIdx.x == 0 && threadIdx.x < 32) {
            unsigned lane = threadIdx.x;
            unsigned j = lane % SPREAD;
            unsigned n = blocks / SPREAD + (j < blocks % SPREAD ? 1 : 0);
            unsigned* w = counters + STRIDE * (1 + j);
            for (;;) {
                unsigned v;
                asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(w) : "memory");
                if (__all_sync(0xffffffffu, v >= n)) break;
                asm volatile("nanosleep.u32 32;");
            }
            asm volatile("fence.acq_rel.gpu;" ::: "memory");
            if (lane == 0) fold[0] = now_ns();
        }
    }
}

int main(int argc, char** argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 50;
    int blocks = argc > 2 ? atoi(argv[2]) : 1024;
    int burst = argc > 3 ? atoi(argv[3]) : 0;
    int with_data = argc > 4 ? atoi(argv[4]) : 1;
    int threads = argc > 5 ? atoi(argv[5]) : 256;
    float* data = nullptr;
    if (with_data) CHECK(cudaMalloc(&data, (size_t)blocks * threads * sizeof(float)));
    unsigned* counters;
    unsigned long long *stamps, *fold;
    const size_t words = STRIDE * (SPREAD + 1);
    CHECK(cudaMalloc(&counters, words * sizeof(unsigned)));
    CHECK(cudaMalloc(&stamps, blocks * sizeof(unsigned long long)));
    CHECK(cudaMalloc(&fold, sizeof(unsigned long long)));
    std::vector<unsigned long long> host(blocks);
    const char* names[] = {"one", "spread", "poll"};
    for (int scheme = 0; scheme < 3; ++scheme) {
        std::vector<double> gap;
        for (int r = 0; r < rounds; ++r) {
            CHECK(cudaMemset(counters, 0, words * sizeof(unsigned)));
            void* args[] = {&scheme, &burst, &counters, &stamps, &fold, &data};
            CHECK(cudaLaunchCooperativeKernel((void*)arrive, dim3(blocks), dim3(threads), args, 0, 0));
            CHECK(cudaDeviceSynchronize());
            unsigned long long f = 0;
            CHECK(cudaMemcpy(host.data(), stamps, blocks * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
            CHECK(cudaMemcpy(&f, fold, sizeof f, cudaMemcpyDeviceToHost));
            unsigned long long last = *std::max_element(host.begin(), host.end());
            gap.push_back((double)(long long)(f - last));
        }
        std::sort(gap.begin(), gap.end());
        printf("{\"scheme\": \"%s\", \"burst\": %d, \"data\": %d, \"blocks\": %d, \"threads\": %d, \"rounds\": %d, \"median_ns\": %.0f, \"p10_ns\": %.0f, \"p90_ns\": %.0f}\n",
               names[scheme], burst, with_data, blocks, threads, rounds, gap[rounds / 2], gap[rounds / 10], gap[rounds * 9 / 10]);
    }
    return 0;
}
