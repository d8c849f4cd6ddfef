// Does compute-sanitizer racecheck model mbarrier arrive(release) -> try_wait(acquire) as
// synchronisation? Warp 0 writes shared memory and arrives; warp 1 waits and reads. With
// MODE=0 the two are ordered by an mbarrier every writer arrives on, with MODE=1 by
// __syncthreads, with MODE=2 by __syncwarp and one arrival of lane 0 (MPK's per-warp FINISHED
// idiom). A hazard reported for one mode and not another tells which orderings racecheck models.
//
//   nvcc -gencode=arch=compute_90a,code=sm_90a -lineinfo -o probe racecheck_mbarrier.cu
//   compute-sanitizer --tool racecheck ./probe 0; compute-sanitizer --tool racecheck ./probe 1
#include <cstdint>
#include <cstdio>
#include <cstdlib>

__global__ void probe(int mode, int *out) {
  __shared__ uint64_t bar;
  __shared__ int data[32];
  uint32_t const b = static_cast<uint32_t>(__cvta_generic_to_shared(&bar));
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(b), "r"(mode == 2 ? 1 : 32) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  int const warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (warp == 0) {
    data[lane] = lane * 3;
    if (mode == 2) __syncwarp();
    if (mode == 0 || (mode == 2 && lane == 0)) asm volatile("{\n .reg .b64 s;\n mbarrier.arrive.release.cta.shared::cta.b64 s, [%0];\n}" ::"r"(b) : "memory");
  }
  if (mode == 1) __syncthreads();
  if (warp == 1) {
    if (mode != 1) {
      uint32_t ok = 0;
      while (!ok) {
        asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [%1], 0;\n selp.u32 %0, 1, 0, p;\n}"
                     : "=r"(ok) : "r"(b) : "memory");
      }
    }
    out[lane] = data[31 - lane];
  }
}

int main(int argc, char **argv) {
  int mode = argc > 1 ? atoi(argv[1]) : 0;
  int *out;
  cudaMalloc(&out, 32 * sizeof(int));
  probe<<<1, 64>>>(mode, out);
  int h[32];
  cudaMemcpy(h, out, sizeof(h), cudaMemcpyDeviceToHost);
  printf("mode %d: out[0] = %d (expect 93), %s\n", mode, h[0], cudaGetErrorString(cudaGetLastError()));
  return h[0] == 93 ? 0 : 1;
}
