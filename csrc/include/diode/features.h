// Feature extraction for GEMM kernel-runtime models.
//
// One problem (op, batch, M, N, K, dtypes, layouts) and N kernel configs in, an N x F float32
// matrix out. This is the only feature path: training and inference both call it, through
// torch_diode._C. The layout of every input array and of the output is described by the
// tables below, which Python reads (problem_columns(), config_columns(), feature_names()),
// so the two languages never keep separate copies of the spec.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace diode {

// Bumped whenever a feature's meaning, order or count changes. Model files record it and the
// engine refuses a model trained on another version.
// Version 2 added the operands' row alignment (ld_* problem columns, align_* features) and the
// register estimates (log2_operand_regs_per_thread, log2_regs_per_thread).
// Version 3 added decompose_k's split of K (the k_split config column; the log2_k_split,
// log2_k_per_split and log2_split_partial_bytes features).
// Version 4 added each operand's loads per thread and K step at the vector width its row
// alignment allows (log2_loads_per_thread_a/_b, sub_word_loads_a/_b).
// From version 2 on, a version only appends features: a model of version v reads the first
// features_of_version(v) features of every row, so the engine still runs models of older
// versions down to kOldestFeatureVersion.
inline constexpr int kFeatureVersion = 4;
inline constexpr int kOldestFeatureVersion = 2;

enum class Op : int32_t { mm = 0, addmm = 1, bmm = 2, baddbmm = 3 };
inline constexpr int kNumOps = 4;

// Element types the data model knows. The names are torch's dtype names without "torch.".
enum class DType : int32_t {
  float32 = 0,
  float16 = 1,
  bfloat16 = 2,
  float8_e4m3fn = 3,
  float8_e5m2 = 4,
  int8 = 5,
  int32 = 6,
  float64 = 7,
};
inline constexpr int kNumDTypes = 8;

// Coarse template families. Template ids are strings in the data model ("triton::mm",
// "aten::bias_addmm", ...); template_kind() maps each to one of these.
enum class TemplateKind : int32_t {
  aten_mm = 0,          // aten::mm, aten::bmm
  aten_addmm = 1,       // aten::addmm, aten::baddbmm
  aten_bias_addmm = 2,  // aten::bias_addmm (mm + broadcast bias epilogue)
  triton_mm = 3,        // triton::mm, triton::bmm
  triton_tma = 4,       // triton::mm_persistent_tma and other TMA templates
  decompose_k = 5,
  contiguous_mm = 6,
  cpp = 7,  // Inductor's CPP GEMM template (CPU)
  other = 8,
};
inline constexpr int kNumTemplateKinds = 9;

// Columns of the int64 problem row. ld_a, ld_b, ld_out: for A, B and the output, the stride (in
// elements) on whose alignment their vectors start: the leading dimension of a dense 2-D operand;
// in general the gcd of the strides stepping between rows (columns, stored transposed) and
// batches, 16 where nothing steps (Python's Problem.leading_dims). It decides the byte alignment
// and so the vector width cuBLAS and Triton can load with.
enum ProblemColumn : int {
  kPOp = 0,
  kPBatch,
  kPM,
  kPN,
  kPK,
  kPDTypeA,
  kPDTypeB,
  kPDTypeOut,
  kPTransposeA,
  kPTransposeB,
  kPHasBias,
  kPLdA,
  kPLdB,
  kPLdOut,
  kNumProblemColumns
};
// Columns of the int64 config rows. Block sizes are 0 for choices that are not tiled (ATen).
enum ConfigColumn : int {
  kCTemplateKind = 0,
  kCBlockM,
  kCBlockN,
  kCBlockK,
  kCGroupM,
  kCNumStages,
  kCNumWarps,
  kCEvenK,
  kCAllowTF32,
  kCUseFastAccum,
  kCKSplit,  // decompose_k: the number of parts K is split into; 0 for every other choice
  kNumConfigColumns
};
// Columns of the int64 hardware row.
enum HardwareColumn : int { kHSmCount = 0, kHSmemPerBlockBytes, kNumHardwareColumns };

// The names of the op, dtype and template-kind codes: index = code.
inline constexpr std::array<std::string_view, kNumOps> kOpNames = {"mm", "addmm", "bmm", "baddbmm"};
inline constexpr std::array<std::string_view, kNumDTypes> kDTypeNames = {
    "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "int8", "int32", "float64"};
inline constexpr std::array<std::string_view, kNumTemplateKinds> kTemplateKindNames = {
    "aten_mm",       "aten_addmm", "aten_bias_addmm",
    "triton_mm",     "triton_tma", "decompose_k",
    "contiguous_mm", "cpp",        "other"};

// The feature columns, in order: compute_features writes every column through these names and
// kFeatures below pairs each with the name Python and model files see. A feature's index is its
// meaning: reordering, inserting or removing one needs a new kFeatureVersion.
enum Feature : int {
  // problem
  kFLog2Batch,
  kFLog2M,
  kFLog2N,
  kFLog2K,
  kFLog2Flops,
  kFLog2MinBytes,
  kFLog2ArithIntensity,
  kFBytesA,
  kFBytesB,
  kFBytesOut,
  kFDTypeIsFp32,
  kFDTypeIsFp16,
  kFDTypeIsBf16,
  kFDTypeIsFp8,
  kFTransposeA,
  kFTransposeB,
  kFAlignA,
  kFAlignB,
  kFAlignOut,
  kFOpIsMm,
  kFOpIsAddmm,
  kFOpIsBmm,
  kFOpIsBaddbmm,  // one-hot of Op: kFOpIsMm + code
  kFHasBias,
  // config; one-hot of TemplateKind: kFTemplateIsAtenMm + code
  kFTemplateIsAtenMm,
  kFTemplateIsAtenAddmm,
  kFTemplateIsAtenBiasAddmm,
  kFTemplateIsTritonMm,
  kFTemplateIsTritonTma,
  kFTemplateIsDecomposeK,
  kFTemplateIsContiguousMm,
  kFTemplateIsCpp,
  kFTemplateIsOther,
  // config, 0 for choices that are not tiled (from kFIsTiled to the end)
  kFIsTiled,
  kFLog2BlockM,
  kFLog2BlockN,
  kFLog2BlockK,
  kFLog2GroupM,
  kFNumStages,
  kFNumWarps,
  kFEvenK,
  kFAllowTf32,
  kFUseFastAccum,
  // problem x config
  kFLog2TilesM,
  kFLog2TilesN,
  kFLog2TilesTotal,
  kFLog2Waves,
  kFWaveEfficiency,
  kFWasteM,
  kFWasteN,
  kFLog2KIters,
  kFWasteK,
  kFSmemPerStageKib,
  kFSmemTotalKib,
  kFSmemFraction,
  kFSmemExceeds,
  kFLog2AccRegsPerThread,
  kFLog2TileIntensity,
  kFLog2FlopsPerTile,
  kFLog2TileBytesPerKIter,
  kFLog2OperandRegsPerThread,
  kFLog2RegsPerThread,
  // feature version 3: decompose_k's split (0 for configs without one). It computes a bmm of
  // k_split batches, each over K / k_split, into fp32 partial sums that a reduction adds up.
  kFLog2KSplit,
  kFLog2KPerSplit,
  kFLog2SplitPartialBytes,
  // feature version 4: the load instructions each thread issues for one K step of an operand's
  // tile (BLOCK_M x BLOCK_K of A, BLOCK_K x BLOCK_N of B), at the widest vector the operand's
  // row alignment allows along its contiguous dimension (16 bytes at most), and whether that
  // vector is narrower than 32 bits (too narrow for cp.async, so the loads are not pipelined).
  // 0 for choices that are not tiled.
  kFLog2LoadsPerThreadA,
  kFLog2LoadsPerThreadB,
  kFSubWordLoadsA,
  kFSubWordLoadsB,
  kNumFeatures
};

struct FeatureSpec {
  Feature index;
  std::string_view name;
};

inline constexpr std::array<FeatureSpec, kNumFeatures> kFeatures = {{
    {kFLog2Batch, "log2_batch"},
    {kFLog2M, "log2_m"},
    {kFLog2N, "log2_n"},
    {kFLog2K, "log2_k"},
    {kFLog2Flops, "log2_flops"},
    {kFLog2MinBytes, "log2_min_bytes"},
    {kFLog2ArithIntensity, "log2_arith_intensity"},
    {kFBytesA, "bytes_a"},
    {kFBytesB, "bytes_b"},
    {kFBytesOut, "bytes_out"},
    {kFDTypeIsFp32, "dtype_is_fp32"},
    {kFDTypeIsFp16, "dtype_is_fp16"},
    {kFDTypeIsBf16, "dtype_is_bf16"},
    {kFDTypeIsFp8, "dtype_is_fp8"},
    {kFTransposeA, "transpose_a"},
    {kFTransposeB, "transpose_b"},
    {kFAlignA, "align_a"},
    {kFAlignB, "align_b"},
    {kFAlignOut, "align_out"},
    {kFOpIsMm, "op_is_mm"},
    {kFOpIsAddmm, "op_is_addmm"},
    {kFOpIsBmm, "op_is_bmm"},
    {kFOpIsBaddbmm, "op_is_baddbmm"},
    {kFHasBias, "has_bias"},
    {kFTemplateIsAtenMm, "template_is_aten_mm"},
    {kFTemplateIsAtenAddmm, "template_is_aten_addmm"},
    {kFTemplateIsAtenBiasAddmm, "template_is_aten_bias_addmm"},
    {kFTemplateIsTritonMm, "template_is_triton_mm"},
    {kFTemplateIsTritonTma, "template_is_triton_tma"},
    {kFTemplateIsDecomposeK, "template_is_decompose_k"},
    {kFTemplateIsContiguousMm, "template_is_contiguous_mm"},
    {kFTemplateIsCpp, "template_is_cpp"},
    {kFTemplateIsOther, "template_is_other"},
    {kFIsTiled, "is_tiled"},
    {kFLog2BlockM, "log2_block_m"},
    {kFLog2BlockN, "log2_block_n"},
    {kFLog2BlockK, "log2_block_k"},
    {kFLog2GroupM, "log2_group_m"},
    {kFNumStages, "num_stages"},
    {kFNumWarps, "num_warps"},
    {kFEvenK, "even_k"},
    {kFAllowTf32, "allow_tf32"},
    {kFUseFastAccum, "use_fast_accum"},
    {kFLog2TilesM, "log2_tiles_m"},
    {kFLog2TilesN, "log2_tiles_n"},
    {kFLog2TilesTotal, "log2_tiles_total"},
    {kFLog2Waves, "log2_waves"},
    {kFWaveEfficiency, "wave_efficiency"},
    {kFWasteM, "waste_m"},
    {kFWasteN, "waste_n"},
    {kFLog2KIters, "log2_k_iters"},
    {kFWasteK, "waste_k"},
    {kFSmemPerStageKib, "smem_per_stage_kib"},
    {kFSmemTotalKib, "smem_total_kib"},
    {kFSmemFraction, "smem_fraction"},
    {kFSmemExceeds, "smem_exceeds"},
    {kFLog2AccRegsPerThread, "log2_acc_regs_per_thread"},
    {kFLog2TileIntensity, "log2_tile_intensity"},
    {kFLog2FlopsPerTile, "log2_flops_per_tile"},
    {kFLog2TileBytesPerKIter, "log2_tile_bytes_per_k_iter"},
    {kFLog2OperandRegsPerThread, "log2_operand_regs_per_thread"},
    {kFLog2RegsPerThread, "log2_regs_per_thread"},
    {kFLog2KSplit, "log2_k_split"},
    {kFLog2KPerSplit, "log2_k_per_split"},
    {kFLog2SplitPartialBytes, "log2_split_partial_bytes"},
    {kFLog2LoadsPerThreadA, "log2_loads_per_thread_a"},
    {kFLog2LoadsPerThreadB, "log2_loads_per_thread_b"},
    {kFSubWordLoadsA, "sub_word_loads_a"},
    {kFSubWordLoadsB, "sub_word_loads_b"},
}};

// How many features (the first ones of a row) a model of feature version `version` reads; 0 for
// a version this build cannot run.
constexpr int features_of_version(int version) {
  switch (version) {
    case 2:
      return kFLog2KSplit;
    case 3:
      return kFLog2LoadsPerThreadA;
    case 4:
      return kNumFeatures;
    default:
      return 0;
  }
}

namespace detail {
// Entry i of kFeatures is feature i, and each one-hot block names the codes it encodes, in order.
consteval bool feature_table_is_consistent() {
  for (size_t i = 0; i < kFeatures.size(); ++i)
    if (static_cast<size_t>(kFeatures[i].index) != i || kFeatures[i].name.empty()) return false;
  for (int op = 0; op < kNumOps; ++op)
    if (!kFeatures[kFOpIsMm + op].name.starts_with("op_is_") ||
        kFeatures[kFOpIsMm + op].name.substr(6) != kOpNames[op])
      return false;
  for (int t = 0; t < kNumTemplateKinds; ++t)
    if (!kFeatures[kFTemplateIsAtenMm + t].name.starts_with("template_is_") ||
        kFeatures[kFTemplateIsAtenMm + t].name.substr(12) != kTemplateKindNames[t])
      return false;
  return true;
}
}  // namespace detail
static_assert(kFeatures.size() == kNumFeatures && kNumFeatures == 69,
              "the feature count is part of kFeatureVersion");
static_assert(features_of_version(kFeatureVersion) == kNumFeatures &&
                  features_of_version(kOldestFeatureVersion) == 62,
              "every version from kOldestFeatureVersion on is a prefix of the next");
static_assert(kFOpIsBaddbmm - kFOpIsMm + 1 == kNumOps && kFHasBias == kFOpIsBaddbmm + 1);
static_assert(kFTemplateIsOther - kFTemplateIsAtenMm + 1 == kNumTemplateKinds &&
              kFIsTiled == kFTemplateIsOther + 1);
static_assert(detail::feature_table_is_consistent(),
              "kFeatures must list every Feature in order, one-hot blocks in code order");

const std::vector<std::string>& problem_columns();
const std::vector<std::string>& config_columns();
const std::vector<std::string>& hardware_columns();
const std::vector<std::string>& feature_names();
const std::vector<std::string>& dtype_names();
const std::vector<std::string>& op_names();
const std::vector<std::string>& template_kind_names();
constexpr int num_features() { return kNumFeatures; }

// Maps a template id string to its family. Never fails: unknown ids are `other`.
TemplateKind template_kind(std::string_view template_id);
// Bytes per element; throws std::invalid_argument for a code outside DType.
int dtype_bytes(int32_t dtype_code);
// log2 of the byte alignment (1 to 16 bytes: 0 to 4) of rows of `leading_dim` elements of
// `elem_bytes` bytes each: 4 where every row starts on a 16-byte boundary (K=480 in fp16),
// 1 for K=479 in fp16 (958-byte rows). The align_* features.
int row_alignment_log2(int64_t leading_dim, int elem_bytes);

// Fills `out` (rows x num_features(), row-major) with the features of config row i paired with
// problem row problem_index[i]. problems: P x kNumProblemColumns; configs: rows x
// kNumConfigColumns; hardware: kNumHardwareColumns. Validates every input and throws
// std::invalid_argument with a message naming the row and column at fault. Does no allocation
// and touches no Python state, so callers may release the GIL around it.
void compute_features(std::span<const int64_t> problems, std::span<const int64_t> problem_index,
                      std::span<const int64_t> configs, std::span<const int64_t> hardware,
                      std::span<float> out);

}  // namespace diode
