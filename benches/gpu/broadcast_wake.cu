// How long a broadcast flag takes to wake ~1000 polling blocks (nvcc -O3 -arch=sm_90). One
// cooperative launch of BLOCKS x 256 threads; block 0 publishes a flag 5 us after it starts
// (bar.sync, then st.release.gpu of the round's epoch, as vyrescope's dataflow Signal does),
// every other block's thread 0 polls it (ld.acquire.gpu, nanosleep 32 between polls, as the
// dataflow Wait does) and stamps %globaltimer when it sees it. With COPIES > 1 the publisher
// writes COPIES words, one per 128-byte line, and block b polls copy b % COPIES. Each row:
// the wake-up latency from the publish stamp to the block's own stamp, median over blocks and
// the latest block, each the median over ROUNDS launches, in nanoseconds.
// Usage: broadcast_wake [ROUNDS] [BLOCKS]  -> one JSON object per row on stdout.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t check_err_ = (x); if (check_err_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(check_err_)); exit(1); } } while (0)

__device__ __forceinline__ unsigned long long now_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void wake(unsigned* flags, unsigned epoch, int copies, unsigned long long* stamps) {
    if (blockIdx.x == 0) {
        unsigned long long t0 = now_ns();
        while (now_ns() - t0 < 5000) {}
        __syncthreads();
        if (threadIdx.x < copies) {
            if (threadIdx.x == 0) stamps[0] = now_ns();
            unsigned* w = flags + 32 * threadIdx.x;
            asm volatile("st.release.gpu.global.u32 [%0], %1;" :: "l"(w), "r"(epoch) : "memory");
        }
        return;
    }
    if (threadIdx.x == 0) {
        unsigned* w = flags + 32 * (blockIdx.x % copies);
        unsigned v;
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(w) : "memory");
        while (v != epoch) {
            asm volatile("nanosleep.u32 32;");
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(w) : "memory");
        }
        stamps[blockIdx.x] = now_ns();
    }
    __syncthreads();
}

int main(int argc, char** argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 50;
    int blocks = argc > 2 ? atoi(argv[2]) : 1056;
    unsigned* flags;
    unsigned long long* stamps;
    CHECK(cudaMalloc(&flags, 32 * 64 * sizeof(unsigned)));
    CHECK(cudaMemset(flags, 0, 32 * 64 * sizeof(unsigned)));
    CHECK(cudaMalloc(&stamps, blocks * sizeof(unsigned long long)));
    std::vector<unsigned long long> host(blocks);
    unsigned epoch = 0;
    for (int copies : {1, 2, 4, 8, 16, 32}) {
        std::vector<double> med, last;
        for (int r = 0; r < rounds; ++r) {
            ++epoch;
            void* args[] = {&flags, &epoch, &copies, &stamps};
            CHECK(cudaLaunchCooperativeKernel((void*)wake, dim3(blocks), dim3(256), args, 0, 0));
            CHECK(cudaDeviceSynchronize());
            CHECK(cudaMemcpy(host.data(), stamps, blocks * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
            std::vector<double> d;
            for (int b = 1; b < blocks; ++b) d.push_back((double)(long long)(host[b] - host[0]));
            std::sort(d.begin(), d.end());
            med.push_back(d[d.size() / 2]);
            last.push_back(d.back());
        }
        std::sort(med.begin(), med.end());
        std::sort(last.begin(), last.end());
        printf("{\"copies\": %d, \"blocks\": %d, \"rounds\": %d, \"median_wake_ns\": %.0f, \"last_wake_ns\": %.0f}\n",
               copies, blocks, rounds, med[rounds / 2], last[rounds / 2]);
    }
    return 0;
}
