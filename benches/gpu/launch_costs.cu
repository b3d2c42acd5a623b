// What the launch path of a fused persistent kernel costs on its own, next to ordinary launches
// (nvcc -O3 -arch=sm_90, CUDA events): empty kernels over 1056x256 blocks, launched plainly or
// cooperatively, with and without a small memset before each (the way vyrescope cleared the
// grid-sync scratch before every cooperative launch), and the same sequences enqueued while a
// 200 us kernel keeps the GPU busy, so host submission is hidden and only the GPU's own cost is
// left. Each row: median over REPS rounds of the device time of one sequence, in microseconds.
// Usage: launch_costs [REPS] [BLOCKS]  -> one JSON object per row on stdout.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t check_err_ = (x); if (check_err_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(check_err_)); exit(1); } } while (0)

__global__ void empty_kernel(unsigned* sink) {
    if (sink != nullptr && threadIdx.x == 1024) sink[0] = 1;  // never true: keeps the parameter
}

__global__ void busy_kernel(unsigned long long ns) {
    unsigned long long t0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    for (;;) {
        unsigned long long t;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        if (t - t0 >= ns) break;
    }
}

struct Form {
    const char* name;
    int launches;
    bool cooperative;
    bool memset;
};

static float run_once(const Form& f, int blocks, unsigned* scratch, bool hidden, cudaStream_t s,
                      cudaEvent_t a, cudaEvent_t b) {
    if (hidden) busy_kernel<<<1, 1, 0, s>>>(200000ull);
    CHECK(cudaEventRecord(a, s));
    for (int i = 0; i < f.launches; ++i) {
        if (f.memset) CHECK(cudaMemsetAsync(scratch, 0, 64 * sizeof(unsigned), s));
        unsigned* arg = scratch;
        void* args[] = {&arg};
        if (f.cooperative) {
            CHECK(cudaLaunchCooperativeKernel((void*)empty_kernel, dim3(blocks), dim3(256), args, 0, s));
        } else {
            CHECK(cudaLaunchKernel((void*)empty_kernel, dim3(blocks), dim3(256), args, 0, s));
        }
    }
    CHECK(cudaEventRecord(b, s));
    CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    return ms * 1000.0f;
}

int main(int argc, char** argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 200;
    int blocks = argc > 2 ? atoi(argv[2]) : 1056;
    unsigned* scratch;
    CHECK(cudaMalloc(&scratch, 64 * sizeof(unsigned)));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    const Form forms[] = {
        {"1 launch", 1, false, false},
        {"1 cooperative launch", 1, true, false},
        {"memset + 1 launch", 1, false, true},
        {"memset + 1 cooperative launch", 1, true, true},
        {"5 launches", 5, false, false},
        {"5 cooperative launches", 5, true, false},
    };
    for (int w = 0; w < 20; ++w) run_once(forms[0], blocks, scratch, false, s, a, b);
    for (bool hidden : {false, true}) {
        for (const Form& f : forms) {
            std::vector<float> t;
            for (int r = 0; r < reps; ++r) t.push_back(run_once(f, blocks, scratch, hidden, s, a, b));
            std::sort(t.begin(), t.end());
            printf("{\"form\": \"%s\", \"submission\": \"%s\", \"blocks\": %d, \"median_us\": %.2f, "
                   "\"p10_us\": %.2f, \"p90_us\": %.2f, \"reps\": %d}\n",
                   f.name, hidden ? "hidden" : "exposed", blocks, t[t.size() / 2],
                   t[t.size() / 10], t[t.size() * 9 / 10], reps);
        }
    }
    return 0;
}
