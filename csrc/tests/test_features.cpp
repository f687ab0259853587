#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "diode/features.h"

namespace {

using diode::compute_features;

// Row-major A (M x K), B (K x N), output (M x N): leading dimensions K, N, N.
std::vector<int64_t> problem(int64_t op, int64_t b, int64_t m, int64_t n, int64_t k,
                             int64_t dtype = 1) {
  return {op, b, m, n, k, dtype, dtype, dtype, 0, 0, op == 1 || op == 3 ? 1 : 0, k, n, n};
}

std::vector<float> run(const std::vector<int64_t>& p, const std::vector<int64_t>& configs,
                       std::vector<int64_t> hw = {132, 232448}) {
  const size_t rows = configs.size() / diode::kNumConfigColumns;
  std::vector<int64_t> idx(rows, 0);
  std::vector<float> out(rows * diode::num_features());
  compute_features(p, idx, configs, hw, out);
  return out;
}

int col(const char* name) {
  const auto& names = diode::feature_names();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<int>(i);
  throw std::runtime_error(std::string("no feature ") + name);
}

TEST(Features, SpecTablesAreConsistent) {
  EXPECT_EQ(diode::problem_columns().size(), static_cast<size_t>(diode::kNumProblemColumns));
  EXPECT_EQ(diode::config_columns().size(), static_cast<size_t>(diode::kNumConfigColumns));
  EXPECT_EQ(diode::dtype_names().size(), static_cast<size_t>(diode::kNumDTypes));
  EXPECT_EQ(diode::template_kind_names().size(), static_cast<size_t>(diode::kNumTemplateKinds));
  EXPECT_EQ(diode::num_features(), 69);
}

TEST(Features, TemplateKinds) {
  EXPECT_EQ(diode::template_kind("aten::mm"), diode::TemplateKind::aten_mm);
  EXPECT_EQ(diode::template_kind("aten::bias_addmm"), diode::TemplateKind::aten_bias_addmm);
  EXPECT_EQ(diode::template_kind("triton::mm"), diode::TemplateKind::triton_mm);
  EXPECT_EQ(diode::template_kind("triton::bmm"), diode::TemplateKind::triton_mm);
  EXPECT_EQ(diode::template_kind("triton::mm_persistent_tma"), diode::TemplateKind::triton_tma);
  EXPECT_EQ(diode::template_kind("decompose_k"), diode::TemplateKind::decompose_k);
  EXPECT_EQ(diode::template_kind("something_new"), diode::TemplateKind::other);
}

TEST(Features, LoadsPerThreadFollowTheRowAlignment) {
  // fp16 NN mm, K=1500: A's rows are 3,000 bytes, 8-byte aligned, so A loads 4 halves at a time:
  // a 64x32 tile over 4 warps is 2,048 / (128 x 4) = 4 loads per thread. B's rows (N=1024) are
  // 16-byte aligned: 32x128 / (128 x 8) = 4 loads.
  std::vector<int64_t> cfg = {3, 64, 128, 32, 8, 3, 4, 1, 0, 0, 0};
  auto f = run(problem(0, 1, 512, 1024, 1500), cfg);
  EXPECT_FLOAT_EQ(f[col("log2_loads_per_thread_a")], 2.0f);
  EXPECT_FLOAT_EQ(f[col("log2_loads_per_thread_b")], 2.0f);
  EXPECT_EQ(f[col("sub_word_loads_a")], 0.f);
  // K=1501: A's rows are 2-byte aligned, one half per load (16 loads), too narrow for cp.async.
  f = run(problem(0, 1, 512, 1024, 1501), cfg);
  EXPECT_FLOAT_EQ(f[col("log2_loads_per_thread_a")], 4.0f);
  EXPECT_EQ(f[col("sub_word_loads_a")], 1.f);
  EXPECT_EQ(f[col("sub_word_loads_b")], 0.f);
  // A tile smaller than one vector per thread counts as one load (log2 0); ATen rows are all 0.
  cfg = {3, 16, 16, 16, 8, 2, 8, 1, 0, 0, 0, /*ATen*/ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  f = run(problem(0, 1, 512, 1024, 1501), cfg);
  EXPECT_FLOAT_EQ(f[col("log2_loads_per_thread_b")], 0.0f);
  EXPECT_EQ(f[col("sub_word_loads_a")], 1.f);
  const size_t nf = diode::num_features();
  for (const char* name : {"log2_loads_per_thread_a", "log2_loads_per_thread_b", "sub_word_loads_a",
                           "sub_word_loads_b"})
    EXPECT_EQ(f[nf + col(name)], 0.f) << name;
}

TEST(Features, TileGeometryOfAnUnevenShape) {
  // M=1000 with BLOCK_M=128 -> 8 tiles covering 1024 rows; N=700 with 64 -> 11 tiles (704).
  std::vector<int64_t> cfg = {3, 128, 64, 32, 8, 3, 4, 1, 0, 0, 0};
  auto f = run(problem(0, 1, 1000, 700, 1024), cfg);
  EXPECT_FLOAT_EQ(f[col("log2_tiles_m")], std::log2(9.0f));
  EXPECT_FLOAT_EQ(f[col("log2_tiles_n")], std::log2(12.0f));
  EXPECT_NEAR(f[col("waste_m")], 1.0 - 1000.0 / 1024.0, 1e-6);
  EXPECT_NEAR(f[col("waste_n")], 1.0 - 700.0 / 704.0, 1e-6);
  EXPECT_NEAR(f[col("waste_k")], 0.0, 1e-9);
  // 88 tiles on 132 SMs: one partial wave, 2/3 full.
  EXPECT_NEAR(f[col("wave_efficiency")], 88.0 / 132.0, 1e-6);
  // fp16: (128*32 + 32*64) * 2 bytes = 12 KiB per stage, 36 KiB for 3 stages.
  EXPECT_FLOAT_EQ(f[col("smem_per_stage_kib")], 12.0f);
  EXPECT_FLOAT_EQ(f[col("smem_total_kib")], 36.0f);
  EXPECT_FLOAT_EQ(f[col("smem_exceeds")], 0.0f);
  EXPECT_FLOAT_EQ(f[col("template_is_triton_mm")], 1.0f);
  EXPECT_FLOAT_EQ(f[col("op_is_mm")], 1.0f);
}

TEST(Features, AtenChoiceHasNoTileFeatures) {
  std::vector<int64_t> cfg = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  auto f = run(problem(2, 8, 256, 256, 64), cfg);
  EXPECT_FLOAT_EQ(f[col("is_tiled")], 0.0f);
  EXPECT_FLOAT_EQ(f[col("log2_block_m")], 0.0f);
  EXPECT_FLOAT_EQ(f[col("template_is_aten_mm")], 1.0f);
  EXPECT_FLOAT_EQ(f[col("log2_batch")], std::log2(9.0f));
}

TEST(Features, AllowTf32CountsOnlyForFloat32) {
  std::vector<int64_t> off = {3, 128, 64, 32, 8, 3, 4, 1, 0, 0, 0},
                       on = {3, 128, 64, 32, 8, 3, 4, 1, 1, 0, 0};
  EXPECT_EQ(run(problem(0, 1, 1024, 1024, 1024, 1), on),
            run(problem(0, 1, 1024, 1024, 1024, 1), off));                                // fp16
  EXPECT_FLOAT_EQ(run(problem(0, 1, 1024, 1024, 1024, 0), on)[col("allow_tf32")], 1.0f);  // fp32
  EXPECT_FLOAT_EQ(run(problem(0, 1, 1024, 1024, 1024, 0), off)[col("allow_tf32")], 0.0f);
}

TEST(Features, AtenChoiceCarriesTf32ForFloat32) {
  // cuBLAS under TF32: an ATen row has no tiles but the TF32 flag, on fp32 only.
  std::vector<int64_t> off = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
                       on = {0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0};
  EXPECT_FLOAT_EQ(run(problem(0, 1, 1024, 1024, 1024, 0), on)[col("allow_tf32")], 1.0f);
  EXPECT_FLOAT_EQ(run(problem(0, 1, 1024, 1024, 1024, 0), off)[col("allow_tf32")], 0.0f);
  EXPECT_EQ(run(problem(0, 1, 1024, 1024, 1024, 1), on),
            run(problem(0, 1, 1024, 1024, 1024, 1), off));
  EXPECT_FLOAT_EQ(run(problem(0, 1, 1024, 1024, 1024, 0), on)[col("is_tiled")], 0.0f);
}

TEST(Features, SharedMemoryOverflowIsFlagged) {
  // fp32 256x256x64, 5 stages: (256*64 + 64*256) * 4 * 5 = 640 KiB > 227 KiB.
  std::vector<int64_t> cfg = {3, 256, 256, 64, 8, 5, 8, 1, 0, 0, 0};
  auto f = run(problem(0, 1, 4096, 4096, 4096, 0), cfg);
  EXPECT_FLOAT_EQ(f[col("smem_exceeds")], 1.0f);
  EXPECT_GT(f[col("smem_fraction")], 1.0f);
}

TEST(Features, RegisterEstimates) {
  // 128x64x256 fp16 with 4 warps: (128*256 + 256*64) * 2 bytes / (128 threads * 4) = 192
  // operand registers, plus 128*64/128 = 64 for the accumulator.
  std::vector<int64_t> cfg = {3, 128, 64, 256, 8, 1, 4, 1, 0, 0, 0};
  auto f = run(problem(0, 1, 2048, 2048, 2048), cfg);
  EXPECT_FLOAT_EQ(f[col("log2_operand_regs_per_thread")], std::log2(193.0f));
  EXPECT_FLOAT_EQ(f[col("log2_regs_per_thread")], std::log2(257.0f));
  std::vector<int64_t> aten = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_FLOAT_EQ(run(problem(0, 1, 2048, 2048, 2048), aten)[col("log2_regs_per_thread")], 0.0f);
}

TEST(Features, RowAlignment) {
  // fp16 rows of 480 elements start on 16-byte boundaries, of 479 on 2-byte ones.
  EXPECT_EQ(diode::row_alignment_log2(480, 2), 4);
  EXPECT_EQ(diode::row_alignment_log2(479, 2), 1);
  EXPECT_EQ(diode::row_alignment_log2(1028, 2), 3);  // 2056 bytes: 8-byte aligned
  EXPECT_EQ(diode::row_alignment_log2(1, 4), 2);
  EXPECT_EQ(diode::row_alignment_log2(4096, 8), 4);  // capped at 16 bytes
  EXPECT_THROW(diode::row_alignment_log2(0, 2), std::invalid_argument);

  std::vector<int64_t> cfg = {3, 64, 64, 32, 8, 3, 4, 0, 0, 0, 0};
  auto f = run(problem(1, 1, 2048, 512, 479), cfg);  // DLRM's K=479 in fp16: A's rows misaligned
  EXPECT_FLOAT_EQ(f[col("align_a")], 1.0f);
  EXPECT_FLOAT_EQ(f[col("align_b")], 4.0f);
  EXPECT_FLOAT_EQ(f[col("align_out")], 4.0f);
  auto padded = problem(1, 1, 2048, 512, 479);
  padded[diode::kPLdA] = 480;  // the same GEMM on a row-padded A (Inductor pads strides)
  EXPECT_FLOAT_EQ(run(padded, cfg)[col("align_a")], 4.0f);
  padded[diode::kPLdA] = 0;
  EXPECT_THROW(run(padded, cfg), std::invalid_argument);
}

TEST(Features, DecomposeKSplitsAreToldApart) {
  // mm 32x64x49152 fp16: decompose_k (kind 5) into 12 and into 48 parts, and cuBLAS (no split).
  const auto p = problem(0, 1, 32, 64, 49152);
  const std::vector<int64_t> split12 = {5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12},
                             split48 = {5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 48},
                             aten = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  const auto f12 = run(p, split12), f48 = run(p, split48), fa = run(p, aten);
  EXPECT_FLOAT_EQ(f12[col("log2_k_split")], std::log2(13.0f));
  EXPECT_FLOAT_EQ(f12[col("log2_k_per_split")], std::log2(1.0f + 49152 / 12));
  EXPECT_FLOAT_EQ(f12[col("log2_split_partial_bytes")], std::log2(1.0f + 4.0f * 12 * 32 * 64));
  EXPECT_GT(f48[col("log2_k_split")], f12[col("log2_k_split")]);
  EXPECT_LT(f48[col("log2_k_per_split")], f12[col("log2_k_per_split")]);
  for (const char* name : {"log2_k_split", "log2_k_per_split", "log2_split_partial_bytes"})
    EXPECT_EQ(fa[col(name)], 0.f) << name;
  EXPECT_NE(f12, f48);
  // A tiled config carries no split either.
  const auto ft = run(p, {3, 32, 64, 128, 8, 3, 4, 1, 0, 0, 0});
  EXPECT_EQ(ft[col("log2_k_split")], 0.f);
  std::vector<int64_t> negative = split12;
  negative.back() = -1;
  EXPECT_THROW(run(p, negative), std::invalid_argument);
}

TEST(Features, BadArgumentsThrowInvalidArgument) {
  std::vector<int64_t> cfg = {3, 64, 64, 32, 8, 3, 4, 1, 0, 0, 0};
  EXPECT_THROW(run(problem(0, 1, 0, 10, 10), cfg), std::invalid_argument);       // M = 0
  EXPECT_THROW(run(problem(7, 1, 10, 10, 10), cfg), std::invalid_argument);      // op
  EXPECT_THROW(run(problem(0, 1, 10, 10, 10, 99), cfg), std::invalid_argument);  // dtype
  std::vector<int64_t> bad = {3, 64, 64, 32, 8, 0, 4, 1, 0, 0, 0};               // 0 stages
  EXPECT_THROW(run(problem(0, 1, 10, 10, 10), bad), std::invalid_argument);
  EXPECT_THROW(run(problem(0, 1, 10, 10, 10), cfg, {0, 1}), std::invalid_argument);
  try {
    run(problem(0, 1, 10, 10, 10), bad);
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("num_stages"), std::string::npos);
  }
}

}  // namespace
