// nvcc -O3 -arch=sm_90 baselines for benches/gpu/run.sh: the same algorithms as the
// vadd_f32, saxpy_f32 and reduce_sum_f32 fixtures, timed with CUDA events.
// Usage: baselines N REPS  -> one JSON object per kernel on stdout.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t check_err_ = (x); if (check_err_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(check_err_)); exit(1); } } while (0)

__global__ void vadd(const float* a, const float* b, float* c, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

// Two roundings like the fixture (no fma contraction).
__global__ void saxpy(const float* params, const float* x, float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    y[i] = __fadd_rn(__fmul_rn(params[0], x[i]), y[i]);
}

__global__ void reduce256(const float* x, float* partial, unsigned n) {
    __shared__ float tile[256];
    unsigned l = threadIdx.x, i = blockIdx.x * 256 + l;
    tile[l] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (unsigned s = 128; s > 0; s >>= 1) {
        if (l < s) tile[l] += tile[l + s];
        __syncthreads();
    }
    if (l == 0) partial[blockIdx.x] = tile[0];
}

__global__ void fill(float* p, unsigned n, unsigned seed) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned h = (i ^ seed) * 2654435761u;
        h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
        p[i] = (h >> 8) * (2.0f / 16777216.0f) - 1.0f;
    }
}

template <typename F>
static void time_kernel(const char* name, unsigned n, int reps, double bytes, F launch) {
    cudaEvent_t s, e;
    CHECK(cudaEventCreate(&s)); CHECK(cudaEventCreate(&e));
    for (int i = 0; i < 3; i++) launch();
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    std::vector<float> ms;
    for (int r = 0; r < reps; r++) {
        CHECK(cudaEventRecord(s));
        launch();
        CHECK(cudaEventRecord(e));
        CHECK(cudaEventSynchronize(e));
        CHECK(cudaGetLastError());
        float t; CHECK(cudaEventElapsedTime(&t, s, e)); ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    double med = reps % 2 ? ms[reps / 2] : 0.5 * (ms[reps / 2 - 1] + ms[reps / 2]);
    printf("{\"kernel\": \"%s\", \"elements\": %u, \"median_ms\": %.5f, \"min_ms\": %.5f, \"max_ms\": %.5f, \"gbps\": %.1f}\n",
           name, n, med, ms[0], ms[reps - 1], bytes / med / 1e6);
    CHECK(cudaEventDestroy(s)); CHECK(cudaEventDestroy(e));
}

int main(int argc, char** argv) {
    unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], 0, 0) : (1u << 26);
    int reps = argc > 2 ? atoi(argv[2]) : 20;
    float *a, *b, *c, *params, *partial;
    CHECK(cudaMalloc(&a, n * 4ull)); CHECK(cudaMalloc(&b, n * 4ull)); CHECK(cudaMalloc(&c, n * 4ull));
    CHECK(cudaMalloc(&params, 4)); CHECK(cudaMalloc(&partial, (n / 256 + 1) * 4ull));
    unsigned g = (n + 255) / 256;
    fill<<<g, 256>>>(a, n, 1); fill<<<g, 256>>>(b, n, 2); fill<<<g, 256>>>(c, n, 3);
    float two_and_half = 2.5f;
    CHECK(cudaMemcpy(params, &two_and_half, 4, cudaMemcpyHostToDevice));
    CHECK(cudaDeviceSynchronize());
    time_kernel("vadd_f32", n, reps, 12.0 * n, [&] { vadd<<<g, 256>>>(a, b, c, n); });
    time_kernel("saxpy_f32", n, reps, 12.0 * n, [&] { saxpy<<<g, 256>>>(params, a, c, n); });
    time_kernel("reduce_sum_f32", n, reps, 4.0 * n + 4.0 * g, [&] { reduce256<<<g, 256>>>(a, partial, n); });
    return 0;
}
