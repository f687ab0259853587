// Feature extraction for GEMM kernel-runtime models.
//
// One problem (op, batch, M, N, K, dtypes, layouts) and N kernel configs in, an N x F float32
// matrix out. This is the only feature path: training and inference both call it, through
// torch_diode._C. The layout of every input array and of the output is described by the
// tables below, which Python reads (problem_columns(), config_columns(), feature_names()),
// so the two languages never keep separate copies of the spec.
#pragma once

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
inline constexpr int kFeatureVersion = 2;

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
  cpp = 7,              // Inductor's CPP GEMM template (CPU)
  other = 8,
};
inline constexpr int kNumTemplateKinds = 9;

// Columns of the int64 problem row. ld_a, ld_b, ld_out: for A, B and the output, the stride (in
// elements) on whose alignment their vectors start: the leading dimension of a dense 2-D operand;
// in general the gcd of the strides stepping between rows (columns, stored transposed) and
// batches, 16 where nothing steps (Python's Problem.leading_dims). It decides the byte alignment
// and so the vector width cuBLAS and Triton can load with.
enum ProblemColumn : int {
  kPOp = 0, kPBatch, kPM, kPN, kPK, kPDTypeA, kPDTypeB, kPDTypeOut,
  kPTransposeA, kPTransposeB, kPHasBias, kPLdA, kPLdB, kPLdOut, kNumProblemColumns
};
// Columns of the int64 config rows. Block sizes are 0 for choices that are not tiled (ATen).
enum ConfigColumn : int {
  kCTemplateKind = 0, kCBlockM, kCBlockN, kCBlockK, kCGroupM, kCNumStages, kCNumWarps,
  kCEvenK, kCAllowTF32, kCUseFastAccum, kNumConfigColumns
};
// Columns of the int64 hardware row.
enum HardwareColumn : int { kHSmCount = 0, kHSmemPerBlockBytes, kNumHardwareColumns };

const std::vector<std::string>& problem_columns();
const std::vector<std::string>& config_columns();
const std::vector<std::string>& hardware_columns();
const std::vector<std::string>& feature_names();
const std::vector<std::string>& dtype_names();
const std::vector<std::string>& op_names();
const std::vector<std::string>& template_kind_names();
int num_features();

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
