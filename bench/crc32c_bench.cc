// CRC32C throughput beside memcpy's, over the same sizes, so one run shows how the checksum
// compares with the cheapest possible pass over the bytes.

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "common/crc32c.h"

namespace magnetar {
namespace {

std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> bytes(n);
  uint32_t x = 2463534242u;
  for (auto& b : bytes) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    b = static_cast<uint8_t>(x);
  }
  return bytes;
}

void BM_Crc32c(benchmark::State& state) {
  const auto data = pattern(static_cast<size_t>(state.range(0)));
  uint32_t crc = 0;
  for (auto _ : state) {
    crc = crc32c::extend(crc, data.data(), data.size());
    benchmark::DoNotOptimize(crc);
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
  state.SetLabel(crc32c::detail::cpu_has_avx512_clmul() ? "avx512"
                 : crc32c::hardware_accelerated()       ? "sse4.2"
                                                        : "portable");
}

void BM_Crc32cSse42(benchmark::State& state) {
  if (!crc32c::detail::cpu_has_sse42()) {
    state.SkipWithError("CPU lacks SSE4.2");
    return;
  }
  const auto data = pattern(static_cast<size_t>(state.range(0)));
  uint32_t crc = 0;
  for (auto _ : state) {
    crc = crc32c::detail::extend_sse42(crc, data.data(), data.size());
    benchmark::DoNotOptimize(crc);
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

void BM_Crc32cPortable(benchmark::State& state) {
  const auto data = pattern(static_cast<size_t>(state.range(0)));
  uint32_t crc = 0;
  for (auto _ : state) {
    crc = crc32c::detail::extend_portable(crc, data.data(), data.size());
    benchmark::DoNotOptimize(crc);
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

void BM_Memcpy(benchmark::State& state) {
  const auto src = pattern(static_cast<size_t>(state.range(0)));
  std::vector<uint8_t> dst(src.size());
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), src.size());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

void sizes(benchmark::internal::Benchmark* b) {
  for (int64_t n : {64, 1024, 4096, 65536, 1048576}) b->Arg(n);
}

BENCHMARK(BM_Crc32c)->Apply(sizes);
BENCHMARK(BM_Crc32cSse42)->Apply(sizes);
BENCHMARK(BM_Crc32cPortable)->Apply(sizes);
BENCHMARK(BM_Memcpy)->Apply(sizes);

}  // namespace
}  // namespace magnetar
